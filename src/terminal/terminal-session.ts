/**
 * One open terminal: the browser's WebSocket joined to the `terminal` stream through the instance's host tunnel.
 * Input and resize messages become terminal-wire.ts frames, in order; the TTY's output goes back as binary messages.
 * Each side's slowness holds the other back (a paste waits for the tunnel, output waits for the browser), so neither
 * piles up in the server's memory.
 *
 * It ends when the shell exits (close 1000, `exit status N`), when the browser closes, when the tunnel stream breaks
 * (4502), or when the service ends it (the instance stopped or was destroyed, the credential was revoked, the server
 * is closing): `end(code, reason)`. What was typed is never logged nor recorded: only how many bytes.
 */
import type { Duplex } from 'node:stream';
import type { WebSocket, RawData } from 'ws';
import { encodeTerminalFrame, inputFrames } from '../protocol/terminal-wire.js';
import type { TunnelStream, TunnelStreamEnd } from '../tunnels/tunnels-contract.js';
import { parseClientMessage, TERMINAL_CLOSE } from './terminal-contract.js';

/** Output bytes sent to the browser but not yet written out, past which the tunnel stream is paused. */
const OUTPUT_HIGH_WATER = 1024 * 1024;
/**
 * Seconds between the server's WebSocket pings: an idle shell still has traffic, so a reverse proxy's idle timeout
 * (nginx's proxy_read_timeout, 60 s by default) does not cut it, and a browser that vanished without a close is found
 * (no pong by the next ping: the session ends).
 */
const PING_EVERY_MS = 25_000;
/** How long the agent's trailers (the exit status) are awaited once its stream ended. */
const TRAILERS_WAIT_MS = 3000;

export interface SessionEnd {
  code: number;
  reason: string;
  /** The shell's exit status as the agent said it (`none` when it could not), or null when it did not say. */
  exit: string | null;
  bytesIn: number;
  bytesOut: number;
}

export interface TerminalSessionHooks {
  /**
   * Asked once the stream ended on the agent's side, before the close is said: a close of the service's own (the
   * instance stopped, which killed the shell) instead of the exit status; null to say the exit status.
   */
  whyEnded(): Promise<{ code: number; reason: string } | null>;
  /** Called once, when the session is over. */
  ended(e: SessionEnd): void;
}

export class TerminalSession {
  private bytesIn = 0;
  private bytesOut = 0;
  private over = false;
  private exit: string | null = null;
  private readonly stream: Duplex;
  private readonly pinger: NodeJS.Timeout;

  constructor(
    private readonly ws: WebSocket,
    private readonly tunnel: TunnelStream,
    private readonly hooks: TerminalSessionHooks,
  ) {
    this.stream = tunnel.stream;
    this.wire();
    let answered = true;
    ws.on('pong', () => (answered = true));
    this.pinger = setInterval(() => {
      if (!answered) return this.end(TERMINAL_CLOSE.exited, 'the browser stopped answering');
      answered = false;
      ws.ping();
    }, PING_EVERY_MS);
    this.pinger.unref();
  }

  /** Ends the session with this close (the tunnel stream is destroyed: the agent hangs the shell up). */
  end(code: number, reason: string): void {
    if (this.over) return;
    this.over = true;
    clearInterval(this.pinger);
    this.stream.destroy();
    if (this.ws.readyState === this.ws.OPEN || this.ws.readyState === this.ws.CONNECTING) this.ws.close(code, reason);
    else this.ws.terminate();
    this.hooks.ended({ code, reason, exit: this.exit, bytesIn: this.bytesIn, bytesOut: this.bytesOut });
  }

  private wire(): void {
    const { ws, stream } = this;
    let pending = 0;
    stream.on('data', (chunk: Buffer) => {
      if (this.over) return;
      this.bytesOut += chunk.length;
      pending += chunk.length;
      if (pending > OUTPUT_HIGH_WATER) stream.pause();
      ws.send(chunk, { binary: true }, () => {
        pending -= chunk.length;
        if (pending <= OUTPUT_HIGH_WATER && stream.isPaused() && !this.over) stream.resume();
      });
    });
    stream.on('error', () => undefined);
    // The agent's side ended (the shell exited, or its container stopped): say why, then close.
    stream.once('end', () => void this.agentEnded());
    stream.once('close', () => {
      // Closed without an end: the tunnel broke.
      if (!this.over && !stream.readableEnded) this.end(TERMINAL_CLOSE.hostLost, 'the connection to the host was lost');
    });

    ws.on('message', (data: RawData, isBinary: boolean) => {
      if (this.over) return;
      if (isBinary) return this.end(TERMINAL_CLOSE.badMessage, 'send JSON text messages');
      const m = parseClientMessage(rawText(data));
      if (typeof m === 'string') return this.end(TERMINAL_CLOSE.badMessage, m);
      if (m.type === 'resize') {
        stream.write(encodeTerminalFrame(m));
        return;
      }
      const bytes = Buffer.from(m.data, 'utf8');
      this.bytesIn += bytes.length;
      let full = false;
      for (const f of inputFrames(bytes)) full = !stream.write(f) || full;
      // A paste bigger than the tunnel takes at once: read no more from the browser until it drains.
      if (full) {
        ws.pause();
        stream.once('drain', () => ws.resume());
      }
    });
    ws.on('error', () => undefined);
    ws.once('close', () => {
      if (!this.over) this.end(TERMINAL_CLOSE.exited, 'closed by the browser');
    });
  }

  private async agentEnded(): Promise<void> {
    // Our side ends too: the stream closes (and its trailers are read) only once both directions are done.
    if (!this.stream.writableEnded) this.stream.end();
    let timer: NodeJS.Timeout | undefined;
    const trailers = await Promise.race([
      this.tunnel.end.catch((): TunnelStreamEnd => ({})),
      new Promise<TunnelStreamEnd>((r) => (timer = setTimeout(() => r({}), TRAILERS_WAIT_MS))),
    ]);
    clearTimeout(timer);
    this.exit = trailers.exit ?? null;
    if (this.over) return;
    const own = await this.hooks.whyEnded().catch(() => null);
    if (own) return this.end(own.code, own.reason);
    const status = /^\d+$/.test(this.exit ?? '') ? `exit status ${this.exit}` : 'the shell ended';
    this.end(TERMINAL_CLOSE.exited, status);
  }
}

function rawText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}
