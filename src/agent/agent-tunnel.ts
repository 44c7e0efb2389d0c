/**
 * The agent's end of its tunnel (docs/AGENT-PROTOCOL.md, "The tunnel"): one outbound connection to the server, on the
 * same URL and TLS as its API calls, upgraded (`Upgrade: gpuplane-tunnel/1`, its machine key as on every call) to
 * reverse HTTP/2: the server opens a CONNECT stream per renter connection and this side answers, so a host behind NAT
 * needs no inbound port. Each stream goes to the handler the agent was given (its data plane: the SSH endpoint, a
 * container port, the rsync daemon); its refusal becomes the stream's 400/404/502 with a reason, its result the
 * stream's trailers. After any close it reconnects with jittered backoff (sdk/backoff.ts), for as long as it runs.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { createServer, type Http2Server, type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2';
import { request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseTargetAuthority, type TunnelStreamEnd, type TunnelStreamInfo, type TunnelTarget } from '../protocol/tunnel-targets.js';
import {
  PING_INTERVAL_HEADER, REASON_HEADER, SOURCE_HEADER, TUNNEL_MAX_FRAME, TUNNEL_PATH, TUNNEL_PING_INTERVAL_S, TUNNEL_SESSION_MEMORY_MB,
  TUNNEL_SESSION_WINDOW, TUNNEL_STREAM_WINDOW, TUNNEL_UPGRADE,
} from '../protocol/tunnel-wire.js';
import { Backoff } from '../sdk/backoff.js';
import type { AgentLog } from './agent-log.js';

export type { TunnelStreamEnd, TunnelStreamInfo, TunnelTarget };

/**
 * Serves one stream: `stream` is the renter's bytes both ways. The stream is accepted (`:status 200`) when the handler
 * first uses it (reads from it, pipes it, writes to it or ends it); throwing (or rejecting) before that refuses it, with the error's `status` when it is
 * a TunnelRefusal (else 502) and its message as the reason. The promise's value becomes the stream's trailers: it
 * must settle once the handler is done with the stream, without waiting for the stream's 'close' (which comes only
 * after the trailers are sent).
 */
export type TunnelHandler = (target: TunnelTarget, stream: Duplex, info: TunnelStreamInfo) => Promise<TunnelStreamEnd>;

/** A handler's "no" to a stream: 400 (not a target), 404 (no such instance here), 502 (the target does not answer). */
export class TunnelRefusal extends Error {
  constructor(
    readonly status: 400 | 404 | 502,
    reason: string,
  ) {
    super(reason);
    this.name = 'TunnelRefusal';
  }
}

/** The handler of an agent without a data plane: every stream is refused. */
export const refuseEveryTarget: TunnelHandler = async () => {
  throw new TunnelRefusal(404, 'this host\'s agent has no data plane: it serves no connections to instances');
};

export interface AgentTunnelOptions {
  /** The server's base URL (`http://` or `https://`), as the agent's API calls use it. */
  url: string;
  machineKey: string;
  handler: TunnelHandler;
  log: AgentLog;
  /** Waits between tries, ms: doubling from `firstMs` to `maxMs`, jittered. @default { firstMs: 1000, maxMs: 30000 } */
  backoff?: { firstMs: number; maxMs: number };
  /** For the jitter. @default Math.random */
  random?: () => number;
  /** The server refused the machine key (401): the agent's credential is gone. The tunnel keeps trying meanwhile. */
  onRefused?: (msg: string) => void;
  /** Each time a tunnel is up (tests, logs). */
  onConnected?: () => void;
}

export interface AgentTunnel {
  /** Whether a tunnel is up now. */
  connected(): boolean;
  /** Ends the tunnel and stops reconnecting; streams in flight are cut. */
  stop(): Promise<void>;
}

/** A session that lasted this long was a good one: the next failure starts the backoff from its first wait again. */
const STABLE_MS = 10_000;
/** The longest the upgrade may take to be answered. */
const DIAL_TIMEOUT_MS = 20_000;
/** Unanswered server PING intervals after which the tunnel is taken as dead. */
const PINGS_MISSED = 3;
/** After a stream's writable side ended, the longest its trailers wait for the handler to settle. */
const TRAILERS_WAIT_MS = 10_000;

const NO_TRAILERS: TunnelStreamEnd = {};
/** The methods a stream's first use goes through (Node's Readable and Writable call them on the instance). */
const SHADOWED = ['_read', '_write', '_writev', '_final'];

class DialError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** A header value HTTP accepts: one line of printable ASCII. */
function headerText(s: string): string {
  return s.replace(/[^\x20-\x7e]/g, '?').slice(0, 500);
}

/** Trailer values as HTTP accepts them (lowercase names, one-line values; pseudo-headers dropped). */
function trailerFields(end: TunnelStreamEnd): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(end ?? {})) {
    const name = k.toLowerCase();
    if (/^[a-z0-9-]+$/.test(name)) out[name] = headerText(String(v));
  }
  return out;
}

/** The upgrade: resolves with the socket (and what came past the 101) and the server's PING interval. */
function dial(o: AgentTunnelOptions, signal: AbortSignal): Promise<{ socket: Socket; head: Buffer; pingMs: number }> {
  return new Promise((resolve, reject) => {
    const url = new URL(TUNNEL_PATH, `${o.url.replace(/\/+$/, '')}/`);
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(url, {
      method: 'GET',
      agent: false,
      headers: { connection: 'Upgrade', upgrade: TUNNEL_UPGRADE, authorization: `Bearer ${o.machineKey}` },
      timeout: DIAL_TIMEOUT_MS,
      signal,
    });
    req.on('error', (err) => reject(new DialError(err.message)));
    req.on('timeout', () => req.destroy(new Error('the server did not answer the tunnel\'s upgrade in time')));
    req.on('response', (res: IncomingMessage) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body = (body + d).slice(0, 2000)));
      res.on('end', () => {
        let msg = body;
        try {
          msg = (JSON.parse(body) as { msg?: string }).msg ?? body;
        } catch {
          /* not the error object: the text as it came */
        }
        reject(new DialError(`the server answered ${res.statusCode}: ${msg}`, res.statusCode));
      });
      res.on('error', () => reject(new DialError(`the server answered ${res.statusCode}`, res.statusCode)));
    });
    req.on('upgrade', (res: IncomingMessage, socket: Socket, head: Buffer) => {
      const s = Number(res.headers[PING_INTERVAL_HEADER]);
      resolve({ socket, head, pingMs: (Number.isFinite(s) && s > 0 ? s : TUNNEL_PING_INTERVAL_S) * 1000 });
    });
    req.end();
  });
}

/** Answers one stream: refuse, or hand it to the handler and send its trailers at the end. */
function serveStream(o: AgentTunnelOptions, stream: ServerHttp2Stream, headers: Record<string, unknown>): void {
  stream.on('error', () => undefined);
  const refuse = (status: number, reason: string) => {
    if (stream.destroyed || stream.headersSent) return;
    try {
      stream.respond({ ':status': status, [REASON_HEADER]: headerText(reason) }, { endStream: true });
    } catch {
      stream.destroy();
    }
  };
  const target = headers[':method'] === 'CONNECT' ? parseTargetAuthority(String(headers[':authority'] ?? '')) : null;
  if (!target) return refuse(400, 'not a tunnel target');
  const info: TunnelStreamInfo = { source: String(headers[SOURCE_HEADER] ?? '') };

  // Accepted on the handler's first read, write or end: until then it may still refuse. The stream's own methods are
  // shadowed on the instance for that moment only, so the bytes go straight to HTTP/2 afterwards (no extra stream).
  const own = stream as unknown as Record<string, unknown>;
  const proto = Object.getPrototypeOf(stream) as Record<string, (...a: unknown[]) => unknown>;
  let accepted = false;
  const accept = () => {
    if (accepted) return;
    accepted = true;
    for (const m of SHADOWED) delete own[m];
    if (!stream.destroyed && !stream.headersSent) stream.respond({ ':status': 200 }, { waitForTrailers: true });
  };
  for (const m of SHADOWED) {
    own[m] = function (this: unknown, ...args: unknown[]) {
      accept();
      return proto[m].apply(this, args);
    };
  }

  let result: Promise<TunnelStreamEnd>;
  try {
    result = Promise.resolve(o.handler(target, stream, info));
  } catch (err) {
    result = Promise.reject(err);
  }
  stream.on('wantTrailers', () => {
    const timer = setTimeout(() => send(NO_TRAILERS), TRAILERS_WAIT_MS);
    let sent = false;
    const send = (t: TunnelStreamEnd) => {
      clearTimeout(timer);
      if (sent || stream.destroyed) return;
      sent = true;
      try {
        stream.sendTrailers(trailerFields(t));
      } catch {
        stream.destroy();
      }
    };
    result.then(send, (err: Error) => send({ error: err.message }));
  });
  result.then(
    () => {
      // Done without writing: accepted with no bytes; done without ending: ended now.
      accept();
      if (!stream.writableEnded && !stream.destroyed) stream.end();
    },
    (err: unknown) => {
      if (!accepted) {
        // A TunnelRefusal's status, or any error's own `status` of the three a refusal may have (a data plane's class).
        const ownStatus = (err as { status?: unknown } | null)?.status;
        const status = err instanceof TunnelRefusal ? err.status : ownStatus === 400 || ownStatus === 404 || ownStatus === 502 ? ownStatus : 502;
        const reason = err instanceof Error && err.message ? err.message : 'the host could not serve the stream';
        accepted = true;
        for (const m of SHADOWED) delete own[m];
        if (status === 502 && !(err instanceof TunnelRefusal) && ownStatus === undefined) o.log.warn({ target: `${target.kind}.${target.instanceId}`, err: reason }, 'a tunnel stream failed before it was accepted');
        return refuse(status, reason);
      }
      if (!stream.writableEnded && !stream.destroyed) stream.end();
    },
  );
}

/** Starts the tunnel and keeps it up until `stop`. */
export function startAgentTunnel(o: AgentTunnelOptions): AgentTunnel {
  const stopping = new AbortController();
  const backoff = new Backoff(o.backoff ?? { firstMs: 1000, maxMs: 30_000 }, o.random);
  const h2: Http2Server = createServer({
    settings: { initialWindowSize: TUNNEL_STREAM_WINDOW, maxFrameSize: TUNNEL_MAX_FRAME, enablePush: false },
    maxSessionMemory: TUNNEL_SESSION_MEMORY_MB,
  });
  h2.on('stream', (stream, headers) => serveStream(o, stream, headers));
  let current: { session: ServerHttp2Session; socket: Socket } | null = null;

  /** Serves HTTP/2 on the upgraded socket until the session ends. */
  function serve(socket: Socket, head: Buffer, pingMs: number): Promise<void> {
    return new Promise((done) => {
      if (head.length > 0) socket.unshift(head);
      socket.setNoDelay(true);
      // The dial's request timeout stays on its socket past the upgrade (Node's client leaves it set): the tunnel's
      // liveness is the PING watch below, never an idle timer.
      socket.setTimeout(0);
      socket.setKeepAlive(true, pingMs);
      let session: ServerHttp2Session | undefined;
      const take = (s: ServerHttp2Session) => (session = s);
      h2.once('session', take);
      h2.emit('connection', socket);
      h2.off('session', take);
      if (!session) {
        socket.destroy();
        return done();
      }
      const s = session;
      current = { session: s, socket };
      s.on('error', () => undefined);
      s.on('connect', () => s.setLocalWindowSize(TUNNEL_SESSION_WINDOW));
      s.on('goaway', () => s.close());
      // The server PINGs every `pingMs`: hearing none for a few of them, the connection is dead (a NAT forgot it).
      // Any bytes count as well as a PING: behind a full flow-control window of data a PING arrives late.
      let heard = Date.now();
      let lastRead = socket.bytesRead;
      s.on('ping', () => (heard = Date.now()));
      const watchdog = setInterval(() => {
        if (socket.bytesRead !== lastRead) {
          lastRead = socket.bytesRead;
          heard = Date.now();
        }
        if (Date.now() - heard > PINGS_MISSED * pingMs) s.destroy();
      }, pingMs).unref();
      s.once('close', () => {
        clearInterval(watchdog);
        socket.destroy();
        if (current?.session === s) current = null;
        done();
      });
    });
  }

  async function loop(): Promise<void> {
    let failing = false;
    while (!stopping.signal.aborted) {
      let reason: string;
      try {
        const { socket, head, pingMs } = await dial(o, stopping.signal);
        if (stopping.signal.aborted) {
          socket.destroy();
          break;
        }
        o.log.info({ url: o.url }, failing ? 'agent tunnel connected again' : 'agent tunnel connected');
        failing = false;
        o.onConnected?.();
        const since = Date.now();
        await serve(socket, head, pingMs);
        if (Date.now() - since >= STABLE_MS) backoff.reset();
        reason = 'the tunnel closed';
      } catch (err) {
        reason = (err as Error).message;
        if (err instanceof DialError && err.status === 401) o.onRefused?.(reason);
      }
      if (stopping.signal.aborted) break;
      const waitMs = backoff.next();
      if (!failing) o.log.warn({ err: reason, retry_in_s: Math.round(waitMs) / 1000 }, 'agent tunnel down; reconnecting');
      failing = true;
      await sleep(waitMs, undefined, { signal: stopping.signal }).catch(() => undefined);
    }
  }

  const running = loop();
  return {
    connected: () => current !== null && !current.session.closed && !current.session.destroyed,
    async stop() {
      stopping.abort();
      if (current) {
        current.session.destroy();
        current.socket.destroy();
      }
      await running;
    },
  };
}
