/**
 * Large replies the server has already serialized (the offer search's ~90 KB), sent as bytes from reused buffers.
 *
 * Replies wait for the end of their event-loop turn (turn-batch.ts). Sent as strings, a loaded turn's replies (32 of
 * ~90 KB) were alive at every young-generation collection of the JS heap: copied, then promoted, so the old generation
 * grew and was collected again and again (a third of the server's CPU). As bytes outside the JS heap they cost the
 * collector nothing; taken from a few reused buffers rather than allocated per reply, they do not grow the process
 * either (a fresh buffer per reply held ~25 MB more resident memory after a load).
 */
import type { ServerResponse } from 'node:http';

/** Size of a reused buffer: a search of the default 64 offers fits, with room to spare. */
export const REPLY_BUFFER_BYTES = 256 * 1024;
/** Buffers kept for reuse at most (one per reply in flight: a turn's worth of connections). */
const KEPT = 64;

export function replyBytes(bufferBytes = REPLY_BUFFER_BYTES) {
  const free: Buffer[] = [];
  return {
    /**
     * The text's UTF-8 bytes for `res`. From a reused buffer when they fit; it goes back for reuse once `res` has
     * handed every byte to the socket ('finish'), and never if the response ends otherwise (the collector takes it).
     */
    bytesFor(res: ServerResponse, text: string): Buffer {
      const buffer = free.pop() ?? Buffer.allocUnsafeSlow(bufferBytes);
      const n = buffer.write(text, 0, 'utf8');
      // With at least 4 bytes left, every character fitted (none takes more): the text was written whole.
      if (n > bufferBytes - 4) {
        free.push(buffer);
        return Buffer.from(text, 'utf8');
      }
      res.once('finish', () => {
        if (free.length < KEPT) free.push(buffer);
      });
      return buffer.subarray(0, n);
    },
    /** Buffers waiting for reuse (tests). */
    kept: () => free.length,
  };
}

export type ReplyBytes = ReturnType<typeof replyBytes>;
