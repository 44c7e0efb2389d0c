/**
 * The reverse proxy to instance ports (issue 32 item 2): HTTP/1.1 spoken over streams of the host agent's tunnel
 * (`{kind: 'tcp', instanceId, port}`: the agent connects to the container's port on the instance's own network), with
 * Node's HTTP client. One keep-alive pool per instance port: a run of requests reuses its streams instead of opening
 * one each. Bodies stream both ways with backpressure (pipe), never buffered: a large upload or download holds a few
 * chunks of memory. The app sees the request as the browser sent it, less our credentials and the hop-by-hop headers,
 * with X-Forwarded-For/-Proto/-Host added.
 */
import { Agent, request as httpRequest, type ClientRequest, type IncomingMessage, type RequestOptions, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { TunnelError, type TunnelsApi } from '../tunnels/tunnels-contract.js';
import { ApiError } from '../platform/errors.js';
import { IDLE_STREAM_MS, MAX_IDLE_STREAMS_PER_PORT, MAX_STREAMS_PER_PORT, PORT_TOKEN_HEADER } from './ports-constants.js';

/** Pools kept before the empty ones are dropped. */
const MAX_POOLS = 1000;
import { cookieWithoutOurs, urlWithoutToken } from './ports-credentials.js';

/** Headers of one hop only (RFC 9110 §7.6.1), never passed on; `upgrade` requests take the raw path (ports-http.ts). */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'upgrade']);

/** Where a request is going. */
export interface PortRoute {
  machineId: number;
  instanceId: number;
  port: number;
}

/** Why a stream could not be had, as the renter's refusal. */
export function tunnelRefusal(route: PortRoute, err: unknown): ApiError {
  const at = `port ${route.port} of instance ${route.instanceId}`;
  if (err instanceof TunnelError) {
    if (err.code === 'not_connected') return new ApiError('service_unavailable', `the host of instance ${route.instanceId} is not connected (its agent is offline or reconnecting): try again in a minute`);
    if (err.code === 'refused') return new ApiError('not_found', `${at} cannot be reached: ${err.message}`);
    return new ApiError('bad_gateway', `${at} cannot be reached: ${err.message} (is the app listening on it?)`);
  }
  return new ApiError('bad_gateway', `${at} did not answer: the connection to the app failed (${(err as NodeJS.ErrnoException)?.code ?? 'closed'})`);
}

/** Gives a tunnel stream the few socket methods Node's HTTP client and agent call on their sockets. */
function socketLike(stream: Duplex): Duplex {
  const s = stream as Duplex & Record<string, unknown>;
  for (const name of ['setKeepAlive', 'setNoDelay', 'ref', 'unref']) if (typeof s[name] !== 'function') s[name] = () => s;
  if (typeof s.setTimeout !== 'function') s.setTimeout = () => s;
  return s;
}

/** The request's headers for the app: ours taken out, the hop's dropped, the forwarded ones added. */
export function forwardHeaders(req: IncomingMessage, forwardedProto: string, trustForwarded: boolean): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const connectionNamed = new Set(String(req.headers.connection ?? '').toLowerCase().split(',').map((s) => s.trim()).filter(Boolean));
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || connectionNamed.has(name) || name === PORT_TOKEN_HEADER) continue;
    if (name === 'cookie') {
      const rest = cookieWithoutOurs(value as string);
      if (rest !== undefined) out.cookie = rest;
      continue;
    }
    if (name.startsWith('x-forwarded-') && !trustForwarded) continue;
    out[name] = value;
  }
  const client = req.socket.remoteAddress ?? '';
  const prior = trustForwarded ? req.headers['x-forwarded-for'] : undefined;
  out['x-forwarded-for'] = prior ? `${String(prior)}, ${client}` : client;
  if (!(trustForwarded && req.headers['x-forwarded-proto'])) out['x-forwarded-proto'] = forwardedProto;
  if (!(trustForwarded && req.headers['x-forwarded-host']) && req.headers.host) out['x-forwarded-host'] = req.headers.host;
  return out;
}

/** The response's raw headers for the browser: the hop's dropped (Node frames the body again), `extra` appended. */
function replyHeaders(raw: string[], extra: string | undefined): string[] {
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    if (HOP_BY_HOP.has(name) || name === 'transfer-encoding') continue;
    out.push(raw[i], raw[i + 1]);
  }
  if (extra) out.push('Set-Cookie', extra);
  return out;
}

export interface ProxyDeps {
  tunnels(): TunnelsApi;
  /** `http` or `https`: the scheme of the port URLs (X-Forwarded-Proto). */
  forwardedProto: string;
  /** GPUPLANE_TRUST_PROXY: X-Forwarded-* of the request are the proxy's and are extended, not replaced. */
  trustForwarded: boolean;
}

export function portProxy(deps: ProxyDeps) {
  const pools = new Map<string, Agent>();

  /** The keep-alive pool of one instance port: its sockets are streams through the machine's tunnel. */
  function poolFor(route: PortRoute): Agent {
    const key = `${route.machineId}:${route.instanceId}:${route.port}`;
    let pool = pools.get(key);
    if (pool) return pool;
    // Ports come and go with instances: past MAX_POOLS, the pools with no stream open or idle are dropped.
    if (pools.size >= MAX_POOLS) {
      for (const [k, p] of pools) {
        if (!Object.keys(p.sockets).length && !Object.keys(p.freeSockets).length && !Object.keys(p.requests).length) pools.delete(k);
      }
    }
    // `timeout`: the agent closes a pooled stream idle that long.
    const agent = new Agent({ keepAlive: true, maxSockets: MAX_STREAMS_PER_PORT, maxFreeSockets: MAX_IDLE_STREAMS_PER_PORT, timeout: IDLE_STREAM_MS, scheduling: 'lifo' });
    agent.createConnection = ((options: { gpuplaneSource?: string }, done: (err: Error | null, s?: Duplex) => void) => {
      deps.tunnels()
        .open(route.machineId, { kind: 'tcp', instanceId: route.instanceId, port: route.port }, { source: options.gpuplaneSource ?? '' })
        .then((t) => {
          t.end.catch(() => undefined);
          done(null, socketLike(t.stream));
        }, (err: Error) => done(err));
      return undefined;
    }) as unknown as Agent['createConnection'];
    pool = agent;
    pools.set(key, pool);
    return pool;
  }

  /**
   * Forwards the request to the route and the answer back. `refused` answers when no stream could be had or the app
   * closed before answering (then nothing was sent yet); once the answer started, a failure cuts the reply.
   */
  function forward(req: IncomingMessage, res: ServerResponse, route: PortRoute, setCookie: string | undefined, refused: (e: ApiError) => void): void {
    const source = `${req.socket.remoteAddress ?? ''}:${req.socket.remotePort ?? 0}`;
    let up: ClientRequest;
    try {
      up = httpRequest({
        agent: poolFor(route),
        method: req.method,
        path: urlWithoutToken(req.url ?? '/'),
        headers: forwardHeaders(req, deps.forwardedProto, deps.trustForwarded),
        setHost: false,
        gpuplaneSource: source,
      } as RequestOptions);
    } catch (err) {
      refused(new ApiError('bad_request', `the request cannot be passed on: ${(err as Error).message}`));
      return;
    }
    up.on('response', (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.statusMessage, replyHeaders(answer.rawHeaders, setCookie));
      answer.pipe(res);
      answer.on('error', () => res.destroy());
      answer.on('aborted', () => res.destroy());
    });
    up.on('error', (err) => {
      if (!res.headersSent) refused(tunnelRefusal(route, err));
      else res.destroy();
    });
    // The browser went away: the stream to the app goes too.
    res.on('close', () => {
      if (!res.writableFinished) up.destroy();
    });
    req.on('error', () => up.destroy());
    req.pipe(up);
  }

  return {
    forward,
    /** Ends every pooled stream (the app closes). */
    close(): void {
      for (const p of pools.values()) p.destroy();
      pools.clear();
    },
  };
}

export type PortProxy = ReturnType<typeof portProxy>;
