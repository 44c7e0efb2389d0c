/**
 * The stream level of the server side, shared by a local tunnel (tunnels-session.ts) and a hop to another process
 * (tunnels-hop.ts), which both speak the same HTTP/2 CONNECT: open a stream on a client session and turn its answer
 * into a TunnelStream or a TunnelError; splice two streams; the HTTP/2 settings both sides use.
 */
import type { ClientHttp2Session, ClientHttp2Stream, IncomingHttpHeaders, SecureClientSessionOptions } from 'node:http2';
import type { Duplex } from 'node:stream';
import { REASON_HEADER, TUNNEL_MAX_FRAME, TUNNEL_SESSION_MEMORY_MB, TUNNEL_STREAM_WINDOW } from '../protocol/tunnel-wire.js';
import { TunnelError, type TunnelStream, type TunnelStreamEnd } from './tunnels-contract.js';

/** Set on a hop's refusal: the TunnelError code the holder met (its status alone would not tell `not_connected`). */
export const CODE_HEADER = 'x-gpuplane-code';
/** Set on a hop's stream: the machine whose tunnel the holder opens the stream on. */
export const MACHINE_HEADER = 'x-gpuplane-machine';

/** The longest a stream's open waits for the agent's answer (it may be probing a container's port meanwhile). */
export const OPEN_TIMEOUT_MS = 20_000;

/** HTTP/2 session options of every tunnel and hop session, either end (the session window is set once connected). */
export const H2_OPTIONS = {
  settings: { initialWindowSize: TUNNEL_STREAM_WINDOW, maxFrameSize: TUNNEL_MAX_FRAME, enablePush: false },
  maxSessionMemory: TUNNEL_SESSION_MEMORY_MB,
} satisfies SecureClientSessionOptions;

const STATUS_OF: Record<TunnelError['code'], number> = { refused: 404, unreachable: 502, not_connected: 503 };

/** The HTTP status a holder answers a hop's stream with, for a TunnelError it met. */
export function statusOf(err: TunnelError): number {
  return STATUS_OF[err.code];
}

/** Trailers (or headers) as plain text fields, without the pseudo-headers. */
export function textFields(h: IncomingHttpHeaders): TunnelStreamEnd {
  const out: TunnelStreamEnd = {};
  for (const [k, v] of Object.entries(h)) {
    if (k.startsWith(':') || v === undefined) continue;
    out[k] = Array.isArray(v) ? v.join(', ') : String(v);
  }
  return out;
}

/** The error a refusal answer stands for: the hop's own code when it says one, else by the agent's status. */
function refusal(status: number, h: IncomingHttpHeaders): TunnelError {
  const reason = typeof h[REASON_HEADER] === 'string' && h[REASON_HEADER] !== '' ? h[REASON_HEADER] : `the host answered ${status}`;
  const code = h[CODE_HEADER];
  if (code === 'not_connected' || code === 'refused' || code === 'unreachable') return new TunnelError(code, reason);
  return new TunnelError(status === 400 || status === 403 || status === 404 ? 'refused' : 'unreachable', reason);
}

/**
 * Opens a CONNECT stream to `authority` on a session and waits for its answer: 200 gives the stream (and its trailers
 * once over), anything else a TunnelError. A session that is gone, or goes before answering, is `not_connected`.
 */
export function openStream(session: ClientHttp2Session, authority: string, headers: Record<string, string>, lost: string): Promise<TunnelStream> {
  return new Promise((resolve, reject) => {
    if (session.closed || session.destroyed) return reject(new TunnelError('not_connected', lost));
    let req: ClientHttp2Stream;
    try {
      req = session.request({ ':method': 'CONNECT', ':authority': authority, ...headers });
    } catch {
      return reject(new TunnelError('not_connected', lost));
    }
    let trailers: TunnelStreamEnd = {};
    req.once('trailers', (t) => (trailers = textFields(t)));
    const end = new Promise<TunnelStreamEnd>((done) => req.once('close', () => done(trailers)));
    let answered = false;
    const fail = (err: TunnelError) => {
      if (answered) return;
      answered = true;
      clearTimeout(timer);
      req.destroy();
      reject(err);
    };
    const timer = setTimeout(() => fail(new TunnelError('unreachable', 'the host did not answer in time')), OPEN_TIMEOUT_MS);
    // Before the answer an error or a close means the session went; after it they are the caller's (its stream's).
    const early = () => fail(new TunnelError('not_connected', lost));
    req.once('error', early);
    req.once('close', early);
    req.once('response', (h) => {
      const status = Number(h[':status']);
      if (status !== 200) return fail(refusal(status, h));
      answered = true;
      clearTimeout(timer);
      req.off('error', early);
      req.off('close', early);
      resolve({ stream: req, end });
    });
  });
}

/**
 * Joins two byte streams both ways, each direction's end passed on (half-close kept), and either one's failure or
 * early close ending the other.
 */
export function splice(a: Duplex, b: Duplex): void {
  a.pipe(b);
  b.pipe(a);
  const cut = (other: Duplex) => () => {
    if (!other.destroyed) other.destroy();
  };
  // A close after both directions ended is the normal end: the other side finishes on its own (its trailers, say).
  const closed = (self: Duplex, other: Duplex) => () => {
    if (!(self.readableEnded && self.writableFinished)) cut(other)();
  };
  a.on('error', cut(b));
  b.on('error', cut(a));
  a.on('close', closed(a, b));
  b.on('close', closed(b, a));
}
