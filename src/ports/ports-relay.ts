/**
 * One HTTP/1.1 exchange with an instance's app over a tunnel stream, and the keep-alive pool of those streams per
 * port (issue 32 item 2). Written rather than Node's HTTP client because of what a download costs: through the client
 * every 16 KiB DATA frame of the tunnel went through its parser, an IncomingMessage and a pipe before the browser's
 * socket, and a 200 MB download ran at 0.43x the same port reached directly (bench/port-proxy.bench.ts). Here the
 * request head is written as the app must see it, the reply's head is parsed (ports-http1.ts), and the body's bytes go
 * to the browser as they come, framing taken off only where it is chunked.
 *
 * A stream goes back to its pool only after a whole exchange that leaves it clean: the request's body all sent, the
 * reply's body ended by its own framing with nothing after it, and no `Connection: close`. Anything else closes it.
 * A reused stream that fails before any byte of the reply, for a request without a body, is tried once on a new one
 * (the app may have closed it idle just then: the same race every keep-alive client meets).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { bodyReader, chunkFrame, FramingError, LAST_CHUNK, parseResponseHead, type BodyReader, type ResponseHead } from './ports-http1.js';

export interface RelayLimits {
  /** Streams open at once per port (busy and idle); requests past it wait for one. */
  maxStreams: number;
  /** Idle streams kept per port. */
  maxIdle: number;
  /** An idle stream is closed after this long. */
  idleMs: number;
  /** Bytes of the reply that may wait for the browser before the app's stream is paused. */
  window: number;
}

/** What the relay writes for one request. */
export interface RelayRequest {
  /** Who asks (`address:port`), for the agent's log: said when a stream is opened for the request. */
  source: string;
  method: string;
  /** The path and query the app sees. */
  path: string;
  /** The headers the app sees (ports-proxy.ts forwardHeaders): hop-by-hop ones are the relay's own. */
  headers: Record<string, string | string[]>;
  /** The browser's request: its body, if any, is passed on. */
  from: IncomingMessage;
}

/**
 * Why an exchange failed. `answered`: some of the reply reached the browser (it can only be cut now); `heard`: the app
 * sent some bytes of a reply.
 */
export class RelayError extends Error {
  heard = false;
  constructor(
    message: string,
    readonly answered: boolean,
    override readonly cause?: unknown,
  ) {
    super(message);
  }
}

/** The headers of the reply for the browser, from the app's; the relay writes them with the status. */
export type ReplyHeaders = (head: ResponseHead) => string[];

/** A pool of kept-alive streams to one instance port. */
export interface RelayPool {
  /** Relays the request and its reply; rejects (RelayError) when it could not, the reply's state in `answered`. */
  exchange(req: RelayRequest, res: ServerResponse, replyHeaders: ReplyHeaders): Promise<void>;
  /** Streams open (busy and idle). */
  open(): number;
  /** Whether no stream is open and no request waits: the pool can be dropped. */
  empty(): boolean;
  close(): void;
}

/** A request body is sent with this many bytes in flight, at most, before the browser's side is paused. */
const REQUEST_IN_FLIGHT = 1024 * 1024;

function requestHead(r: RelayRequest, chunked: boolean): string {
  const lines = [`${r.method} ${r.path} HTTP/1.1`];
  for (const [name, value] of Object.entries(r.headers)) {
    const lower = name.toLowerCase();
    // Framing and the connection are this hop's: the body is sent as the browser's length says, or chunked.
    if (lower === 'transfer-encoding' || lower === 'connection' || lower === 'keep-alive') continue;
    if (lower === 'content-length' && chunked) continue;
    for (const v of [value].flat()) lines.push(`${name}: ${v}`);
  }
  if (chunked) lines.push('Transfer-Encoding: chunked');
  lines.push('Connection: keep-alive');
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/** Whether the browser's request has a body, and whether it came chunked (its length unknown). */
function bodyOf(from: IncomingMessage): { has: boolean; chunked: boolean } {
  const te = from.headers['transfer-encoding'];
  if (te !== undefined) return { has: true, chunked: true };
  const len = Number(from.headers['content-length'] ?? 0);
  return { has: len > 0, chunked: false };
}

export function relayPool(openStream: (source: string) => Promise<Duplex>, limits: RelayLimits): RelayPool {
  const idle: { stream: Duplex; timer: NodeJS.Timeout; drop: () => void }[] = [];
  const waiting: (() => void)[] = [];
  let count = 0;
  let closed = false;

  function forget(stream: Duplex): void {
    const i = idle.findIndex((e) => e.stream === stream);
    if (i >= 0) {
      clearTimeout(idle[i].timer);
      idle.splice(i, 1);
    }
  }

  /** A stream closed for good: one fewer open, a waiting request may open its own. */
  function gone(): void {
    count--;
    waiting.shift()?.();
  }

  /** A stream just opened, already counted: counted out again when it closes. */
  function track(stream: Duplex): Duplex {
    stream.once('close', () => {
      forget(stream);
      gone();
    });
    stream.on('error', () => undefined);
    return stream;
  }

  /** An idle stream (newest first), or a new one; waits while `maxStreams` are open and none is idle. */
  async function take(source: string): Promise<{ stream: Duplex; reused: boolean }> {
    for (;;) {
      if (closed) throw new RelayError('the server is closing', false);
      const e = idle.pop();
      if (e) {
        clearTimeout(e.timer);
        e.drop();
        if (!e.stream.destroyed) return { stream: e.stream, reused: true };
        continue;
      }
      if (count < limits.maxStreams) {
        // Counted before it opens, so that requests arriving meanwhile wait rather than open past the cap.
        count++;
        let s: Duplex;
        try {
          s = await openStream(source);
        } catch (err) {
          gone();
          throw err;
        }
        return { stream: track(s), reused: false };
      }
      await new Promise<void>((resolve) => waiting.push(resolve));
    }
  }

  /** Back to the pool after a clean exchange; an app that talks or closes while it is idle ends it. */
  function release(stream: Duplex): void {
    if (closed || stream.destroyed || idle.length >= limits.maxIdle) return void stream.destroy();
    const drop = () => {
      stream.off('data', spoiled);
      stream.off('end', spoiled);
    };
    const spoiled = () => {
      drop();
      forget(stream);
      stream.destroy();
    };
    stream.on('data', spoiled);
    stream.on('end', spoiled);
    const timer = setTimeout(spoiled, limits.idleMs);
    timer.unref();
    idle.push({ stream, timer, drop });
    waiting.shift()?.();
  }

  /** One exchange on `stream`. Resolves `clean` when the stream may be used again. */
  function run(stream: Duplex, req: RelayRequest, res: ServerResponse, replyHeaders: ReplyHeaders): Promise<{ clean: boolean }> {
    return new Promise((resolve, reject) => {
      const body = bodyOf(req.from);
      let pending: Buffer = Buffer.alloc(0);
      let reader: BodyReader | null = null;
      let head: ResponseHead | null = null;
      let gotBytes = false;
      let sentAll = !body.has;
      let settled = false;
      let waitingDrain = false;

      const cleanup = () => {
        stream.off('data', onData);
        stream.off('end', onEnd);
        stream.off('close', onClose);
        stream.off('error', onError);
        res.off('close', onBrowserGone);
      };
      const fail = (err: RelayError) => {
        if (settled) return;
        settled = true;
        err.heard = gotBytes;
        cleanup();
        stream.destroy();
        reject(err);
      };
      const finish = (clean: boolean) => {
        if (settled) return;
        settled = true;
        cleanup();
        if (waitingDrain) stream.resume();
        res.end();
        resolve({ clean: clean && sentAll && !head!.closes });
      };

      const passOn = (data: Buffer[]) => {
        for (const d of data) if (d.length) res.write(d);
        if (!waitingDrain && res.writableLength >= limits.window) {
          waitingDrain = true;
          stream.pause();
          res.once('drain', () => {
            waitingDrain = false;
            if (!settled) stream.resume();
          });
        }
      };

      const onBody = (chunk: Buffer) => {
        const step = reader!.feed(chunk);
        passOn(step.data);
        if (step.done) finish(step.rest === null);
      };

      const onData = (chunk: Buffer) => {
        gotBytes = true;
        if (reader) {
          try {
            return onBody(chunk);
          } catch (err) {
            return fail(new RelayError((err as Error).message, true, err));
          }
        }
        pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
        try {
          for (;;) {
            const parsed = parseResponseHead(pending);
            if (!parsed) return;
            pending = pending.subarray(parsed.bodyStart);
            // An interim reply (100 Continue, 103 Early Hints) is the app's business with this hop: the final one follows.
            if (parsed.head.status >= 100 && parsed.head.status < 200) {
              if (parsed.head.status === 101) throw new FramingError('the app switched protocols on a plain request');
              continue;
            }
            head = parsed.head;
            break;
          }
          res.writeHead(head.status, head.statusText, replyHeaders(head));
          reader = bodyReader(req.method, head);
        } catch (err) {
          return fail(new RelayError(err instanceof FramingError ? err.message : `the app's reply cannot be passed on: ${(err as Error).message}`, res.headersSent, err));
        }
        const rest = pending;
        pending = Buffer.alloc(0);
        try {
          onBody(rest);
        } catch (err) {
          fail(new RelayError((err as Error).message, true, err));
        }
      };
      const onEnd = () => {
        if (reader?.endOfStream()) return finish(false);
        fail(new RelayError(head ? 'the app closed the connection before the reply ended' : 'the app closed the connection without answering', res.headersSent));
      };
      const onClose = () => onEnd();
      const onError = (err: Error) => fail(new RelayError(`the connection to the app failed (${(err as NodeJS.ErrnoException).code ?? err.message})`, res.headersSent, err));
      // The browser went away: the exchange cannot finish, and the stream holds an unknown part of the reply.
      const onBrowserGone = () => {
        if (!res.writableFinished) fail(new RelayError('the browser went away', true));
      };

      stream.on('data', onData);
      stream.on('end', onEnd);
      stream.on('close', onClose);
      stream.on('error', onError);
      res.on('close', onBrowserGone);
      if (stream.isPaused()) stream.resume();

      stream.write(requestHead(req, body.chunked));
      if (!body.has) return;
      // The body, framed again if it came chunked, with a window of its own (a large upload is not held to 16 KiB).
      const from = req.from;
      let waitingUp = false;
      from.on('data', (chunk: Buffer) => {
        if (settled || stream.destroyed) return;
        if (body.chunked) for (const part of chunkFrame(chunk)) stream.write(part);
        else stream.write(chunk);
        if (!waitingUp && stream.writableLength >= REQUEST_IN_FLIGHT) {
          waitingUp = true;
          from.pause();
          stream.once('drain', () => {
            waitingUp = false;
            from.resume();
          });
        }
      });
      from.once('end', () => {
        if (body.chunked && !stream.destroyed) stream.write(LAST_CHUNK);
        sentAll = true;
      });
      from.once('error', () => fail(new RelayError('the browser\'s request broke off', res.headersSent)));
    });
  }

  return {
    async exchange(req, res, replyHeaders) {
      for (let attempt = 0; ; attempt++) {
        const { stream, reused } = await take(req.source);
        try {
          const { clean } = await run(stream, req, res, replyHeaders);
          if (clean) release(stream);
          else stream.destroy();
          return;
        } catch (err) {
          const e = err as RelayError;
          // A kept-alive stream the app had just closed: nothing was heard, and a request without a body can go again.
          if (reused && attempt === 0 && !e.heard && !bodyOf(req.from).has) continue;
          throw e;
        }
      }
    },
    open: () => count,
    empty: () => count === 0 && waiting.length === 0,
    close() {
      closed = true;
      for (const e of idle.splice(0)) {
        clearTimeout(e.timer);
        e.stream.destroy();
      }
      for (const w of waiting.splice(0)) w();
    },
  };
}
