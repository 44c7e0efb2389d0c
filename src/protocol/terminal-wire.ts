/**
 * The `terminal` tunnel target's frames (issue 32), from the server to the agent: each is a type byte, a big-endian
 * 32-bit length and that many bytes. `input`: keystrokes and pasted text for the shell's TTY; `resize`: the TTY's new
 * size, rows then columns, each a big-endian 16-bit number. From the agent back: the TTY's output, raw. The stream ends
 * when the shell exits (trailer `exit`) or either side closes it.
 */
export const TERMINAL_INPUT = 0;
export const TERMINAL_RESIZE = 1;
/** The largest frame either side accepts (a paste is cut into frames of at most this). */
export const TERMINAL_FRAME_MAX = 64 * 1024;
const HEADER = 5;

export type TerminalFrame = { type: 'input'; data: Buffer } | { type: 'resize'; rows: number; cols: number };

/** One frame's bytes (input longer than TERMINAL_FRAME_MAX is sent as several: `inputFrames`). */
export function encodeTerminalFrame(f: TerminalFrame): Buffer {
  if (f.type === 'resize') {
    const b = Buffer.alloc(HEADER + 4);
    b[0] = TERMINAL_RESIZE;
    b.writeUInt32BE(4, 1);
    b.writeUInt16BE(Math.max(1, Math.min(0xffff, Math.floor(f.rows))), HEADER);
    b.writeUInt16BE(Math.max(1, Math.min(0xffff, Math.floor(f.cols))), HEADER + 2);
    return b;
  }
  if (f.data.length > TERMINAL_FRAME_MAX) throw new RangeError('terminal input frame too large');
  const head = Buffer.alloc(HEADER);
  head[0] = TERMINAL_INPUT;
  head.writeUInt32BE(f.data.length, 1);
  return Buffer.concat([head, f.data]);
}

/** Input of any length as frames of at most TERMINAL_FRAME_MAX bytes. */
export function inputFrames(data: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < data.length; i += TERMINAL_FRAME_MAX) out.push(encodeTerminalFrame({ type: 'input', data: data.subarray(i, i + TERMINAL_FRAME_MAX) }));
  return out;
}

/** Reads frames from chunks as they arrive; a malformed frame (unknown type, too long) throws. */
export class TerminalFrameReader {
  private pending: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): TerminalFrame[] {
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    const out: TerminalFrame[] = [];
    while (this.pending.length >= HEADER) {
      const type = this.pending[0];
      const len = this.pending.readUInt32BE(1);
      if (type !== TERMINAL_INPUT && type !== TERMINAL_RESIZE) throw new Error(`unknown terminal frame type ${type}`);
      if (len > TERMINAL_FRAME_MAX || (type === TERMINAL_RESIZE && len !== 4)) throw new Error('malformed terminal frame');
      if (this.pending.length < HEADER + len) break;
      const body = this.pending.subarray(HEADER, HEADER + len);
      out.push(type === TERMINAL_INPUT ? { type: 'input', data: Buffer.from(body) } : { type: 'resize', rows: body.readUInt16BE(0), cols: body.readUInt16BE(2) });
      this.pending = this.pending.subarray(HEADER + len);
    }
    return out;
  }
}
