/**
 * The hop between server processes on one database (docs/AGENT-PROTOCOL.md, "The tunnel", many processes): a process
 * asked for a stream to a machine whose tunnel another process holds opens it through that holder. It keeps one hop
 * connection per holder: an HTTP Upgrade (`Upgrade: gpuplane-hop/1`) to the holder's hop URL, signed with an HMAC of
 * the cluster's hop secret (kept in the database, so only processes of this database have it), then HTTP/2 on the
 * socket with this process as the client, one CONNECT stream per renter connection naming the machine and the target.
 * The holder opens a stream on its local tunnel and splices the two, the agent's answer and trailers passed back.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { connect, createServer, type ClientHttp2Session, type ServerHttp2Stream } from 'node:http2';
import { request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Random } from '../platform/random.js';
import { parseTargetAuthority, targetAuthority } from '../protocol/tunnel-targets.js';
import { REASON_HEADER, SOURCE_HEADER, TUNNEL_SESSION_WINDOW } from '../protocol/tunnel-wire.js';
import { TunnelError, type TunnelStream, type TunnelStreamInfo, type TunnelTarget } from './tunnels-contract.js';
import { NOT_CONNECTED } from './tunnels-session.js';
import { CODE_HEADER, H2_OPTIONS, MACHINE_HEADER, openStream, splice, statusOf } from './tunnels-streams.js';

export const HOP_PATH = '/api/v0/tunnels/hop/';
export const HOP_UPGRADE = 'gpuplane-hop/1';
/** `<unix seconds>.<nonce>.<hex HMAC-SHA256 of "gpuplane-hop/1 <seconds> <nonce>">`. */
export const HOP_AUTH_HEADER = 'x-gpuplane-hop-auth';
/** A hop's signature is good this many seconds either side of the holder's clock, and its nonce is used once. */
export const HOP_WINDOW_S = 60;
/** The longest a hop connection's upgrade may take. */
const HOP_CONNECT_TIMEOUT_MS = 5_000;

function signature(secret: string, seconds: number, nonce: string): string {
  return createHmac('sha256', secret).update(`${HOP_UPGRADE} ${seconds} ${nonce}`).digest('hex');
}

/** A fresh signed value of the hop's auth header. */
export function hopAuth(secret: string, nowMs: number, random: Random): string {
  const seconds = Math.floor(nowMs / 1000);
  const nonce = random.bytes(16).toString('hex');
  return `${seconds}.${nonce}.${signature(secret, seconds, nonce)}`;
}

/** A header value that HTTP accepts: one line of printable ASCII. */
export function headerText(s: string): string {
  return s.replace(/[^\x20-\x7e]/g, '?').slice(0, 500);
}

export interface HopDeps {
  /** The cluster's hop secret (read once from the database). */
  secret: () => Promise<string>;
  random: Random;
  /** Wall-clock milliseconds (a virtual service clock is no use between processes). */
  nowMs: () => number;
}

/** The side that makes hops: one pooled HTTP/2 session per holder's hop URL. */
export function hopClient(deps: HopDeps) {
  const pool = new Map<string, Promise<ClientHttp2Session>>();

  function dial(hopUrl: string, onClose: () => void): Promise<ClientHttp2Session> {
    return deps.secret().then((secret) => new Promise<ClientHttp2Session>((resolve, reject) => {
      let url: URL;
      try {
        url = new URL(HOP_PATH, hopUrl);
      } catch {
        return reject(new TunnelError('not_connected', NOT_CONNECTED));
      }
      const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
      const req = send(url, {
        method: 'GET',
        headers: { connection: 'Upgrade', upgrade: HOP_UPGRADE, [HOP_AUTH_HEADER]: hopAuth(secret, deps.nowMs(), deps.random) },
        timeout: HOP_CONNECT_TIMEOUT_MS,
      });
      // The holder is gone (a stale row), refuses, or answers something else: the machine is not reachable.
      const gone = () => reject(new TunnelError('not_connected', NOT_CONNECTED));
      req.on('error', gone);
      req.on('timeout', () => req.destroy());
      req.on('response', (res: IncomingMessage) => {
        res.resume();
        gone();
      });
      req.on('upgrade', (_res, socket: Socket, head: Buffer) => {
        req.off('error', gone);
        if (head.length > 0) socket.unshift(head);
        socket.setNoDelay(true);
        socket.setTimeout(0);
        const h2 = connect(url.origin, { ...H2_OPTIONS, createConnection: () => socket });
        h2.on('connect', () => h2.setLocalWindowSize(TUNNEL_SESSION_WINDOW));
        h2.on('error', () => undefined);
        h2.on('goaway', () => h2.close());
        h2.once('close', () => {
          socket.destroy();
          onClose();
        });
        resolve(h2);
      });
      req.end();
    }));
  }

  async function session(hopUrl: string): Promise<ClientHttp2Session> {
    const known = pool.get(hopUrl);
    if (known) {
      const s = await known.catch(() => undefined);
      if (s && !s.closed && !s.destroyed) return s;
      if (pool.get(hopUrl) === known) pool.delete(hopUrl);
    }
    const forget = () => {
      if (pool.get(hopUrl) === made) pool.delete(hopUrl);
    };
    const made: Promise<ClientHttp2Session> = dial(hopUrl, forget);
    pool.set(hopUrl, made);
    made.catch(forget);
    return made;
  }

  return {
    /** A stream to the target through the holder at `hopUrl`; rejects with a TunnelError. */
    async open(hopUrl: string, machineId: number, target: TunnelTarget, info: TunnelStreamInfo): Promise<TunnelStream> {
      const s = await session(hopUrl);
      return openStream(s, targetAuthority(target), { [SOURCE_HEADER]: info.source, [MACHINE_HEADER]: String(machineId) }, NOT_CONNECTED);
    },
    close(): void {
      for (const p of pool.values()) void p.then((s) => s.destroy(), () => undefined);
      pool.clear();
    },
  };
}

/** The holder's side: checks a hop's signature and serves its streams on the local tunnels. */
export function hopHolder(deps: HopDeps & { openLocal: (machineId: number, target: TunnelTarget, info: TunnelStreamInfo) => Promise<TunnelStream> }) {
  /** Nonces seen within the window, with when they stop mattering (ms): a recorded upgrade cannot be replayed. */
  const seen = new Map<string, number>();
  const server = createServer(H2_OPTIONS);
  const sockets = new Set<Duplex>();
  server.on('session', (s) => {
    s.on('connect', () => s.setLocalWindowSize(TUNNEL_SESSION_WINDOW));
    s.on('error', () => undefined);
  });
  server.on('stream', (stream: ServerHttp2Stream, headers) => {
    stream.on('error', () => undefined);
    const refuse = (err: TunnelError) => {
      if (stream.destroyed || stream.headersSent) return;
      stream.respond({ ':status': statusOf(err), [CODE_HEADER]: err.code, [REASON_HEADER]: headerText(err.message) }, { endStream: true });
    };
    const machineId = Number(headers[MACHINE_HEADER]);
    const target = parseTargetAuthority(String(headers[':authority'] ?? ''));
    if (!target || !Number.isSafeInteger(machineId) || machineId <= 0) return refuse(new TunnelError('refused', 'not a tunnel target'));
    const source = String(headers[SOURCE_HEADER] ?? '');
    deps.openLocal(machineId, target, { source }).then(
      (local) => {
        if (stream.destroyed) return local.stream.destroy();
        stream.respond({ ':status': 200 }, { waitForTrailers: true });
        stream.on('wantTrailers', () => {
          void local.end.then((t) => {
            if (!stream.destroyed) stream.sendTrailers(t);
          });
        });
        splice(stream, local.stream);
      },
      (err) => refuse(err instanceof TunnelError ? err : new TunnelError('unreachable', 'the host could not be reached')),
    );
  });

  /** Whether the auth header is a fresh, unused signature of the secret. */
  function verified(secret: string, value: string | undefined): boolean {
    const m = /^([0-9]{1,12})\.([0-9a-f]{32})\.([0-9a-f]{64})$/.exec(value ?? '');
    if (!m) return false;
    const now = deps.nowMs();
    const seconds = Number(m[1]);
    if (Math.abs(now / 1000 - seconds) > HOP_WINDOW_S) return false;
    const want = Buffer.from(signature(secret, seconds, m[2]), 'hex');
    if (!timingSafeEqual(want, Buffer.from(m[3], 'hex'))) return false;
    for (const [n, until] of seen) if (until < now) seen.delete(n);
    if (seen.has(m[2])) return false;
    seen.set(m[2], now + 2 * HOP_WINDOW_S * 1000);
    return true;
  }

  return {
    /** Checks the upgrade's signature: true when it is good (the caller then answers 101 and calls `serve`). */
    async verify(authHeader: string | undefined): Promise<boolean> {
      return verified(await deps.secret(), authHeader);
    },
    /** Serves a verified hop's HTTP/2 on its socket. */
    serve(socket: Socket, head: Buffer): void {
      if (head.length > 0) socket.unshift(head);
      socket.setNoDelay(true);
      socket.setTimeout(0);
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      server.emit('connection', socket);
    },
    close(): void {
      for (const s of sockets) s.destroy();
    },
  };
}
