/**
 * The reverse proxy to instance ports (issue 32 item 2): HTTP/1.1 spoken over streams of the host agent's tunnel
 * (`{kind: 'tcp', instanceId, port}`: the agent connects to the container's port on the instance's own network), by
 * the relay (ports-relay.ts). One keep-alive pool per instance port: a run of requests reuses its streams instead of
 * opening one each. Bodies stream both ways with backpressure, never buffered whole: a large upload or download holds
 * about a MiB of memory at most (REPLY_IN_FLIGHT). The app sees the request as the browser sent it, less our
 * credentials and the hop-by-hop headers, with X-Forwarded-For/-Proto/-Host added.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { TunnelError, type TunnelsApi } from '../tunnels/tunnels-contract.js';
import { ApiError } from '../platform/errors.js';
import { IDLE_STREAM_MS, MAX_IDLE_STREAMS_PER_PORT, MAX_STREAMS_PER_PORT, PORT_TOKEN_HEADER } from './ports-constants.js';
import { cookieWithoutOurs, urlWithoutToken } from './ports-credentials.js';
import type { ResponseHead } from './ports-http1.js';
import { relayPool, RelayError, type RelayPool } from './ports-relay.js';

/** Pools kept before the empty ones are dropped. */
const MAX_POOLS = 1000;
/** Bytes of an app's reply that may wait for the browser before the app's stream is paused. */
const REPLY_IN_FLIGHT = 1024 * 1024;

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
  if (err instanceof RelayError) return new ApiError('bad_gateway', `${at} did not answer: ${err.message}`);
  if (err instanceof TunnelError) {
    if (err.code === 'not_connected') return new ApiError('service_unavailable', `the host of instance ${route.instanceId} is not connected (its agent is offline or reconnecting): try again in a minute`);
    if (err.code === 'refused') return new ApiError('not_found', `${at} cannot be reached: ${err.message}`);
    return new ApiError('bad_gateway', `${at} cannot be reached: ${err.message} (is the app listening on it?)`);
  }
  return new ApiError('bad_gateway', `${at} did not answer: the connection to the app failed (${(err as NodeJS.ErrnoException)?.code ?? 'closed'})`);
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

/** The reply's headers for the browser: the hop's dropped (Node frames the body again), `extra` appended. */
function replyHeaders(head: ResponseHead, extra: string | undefined): string[] {
  const raw = head.rawHeaders;
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    if (HOP_BY_HOP.has(name) || name === 'transfer-encoding' || (name === 'content-length' && head.length === null)) continue;
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
  const pools = new Map<string, RelayPool>();

  /** The keep-alive pool of one instance port: its streams go through the machine's tunnel. */
  function poolFor(route: PortRoute): RelayPool {
    const key = `${route.machineId}:${route.instanceId}:${route.port}`;
    let pool = pools.get(key);
    if (pool) return pool;
    // Ports come and go with instances: past MAX_POOLS, the pools with no stream open and none wanted are dropped.
    if (pools.size >= MAX_POOLS) for (const [k, p] of pools) if (p.empty()) pools.delete(k);
    const open = async (source: string) => {
      const t = await deps.tunnels().open(route.machineId, { kind: 'tcp', instanceId: route.instanceId, port: route.port }, { source });
      t.end.catch(() => undefined);
      return t.stream;
    };
    pool = relayPool(open, { maxStreams: MAX_STREAMS_PER_PORT, maxIdle: MAX_IDLE_STREAMS_PER_PORT, idleMs: IDLE_STREAM_MS, window: REPLY_IN_FLIGHT });
    pools.set(key, pool);
    return pool;
  }

  /**
   * Forwards the request to the route and the answer back. `refused` answers when no stream could be had or the app
   * closed before answering (then nothing was sent yet); once the answer started, a failure cuts the reply.
   */
  function forward(req: IncomingMessage, res: ServerResponse, route: PortRoute, setCookie: string | undefined, refused: (e: ApiError) => void): void {
    const request = {
      source: `${req.socket.remoteAddress ?? ''}:${req.socket.remotePort ?? 0}`,
      method: req.method ?? 'GET',
      path: urlWithoutToken(req.url ?? '/'),
      headers: forwardHeaders(req, deps.forwardedProto, deps.trustForwarded),
      from: req,
    };
    poolFor(route)
      .exchange(request, res, (head) => replyHeaders(head, setCookie))
      .catch((err: unknown) => {
        if (!res.headersSent && !(err instanceof RelayError && err.answered)) refused(tunnelRefusal(route, err));
        else res.destroy();
      });
  }

  return {
    forward,
    /** Ends every pooled stream (the app closes). */
    close(): void {
      for (const p of pools.values()) p.close();
      pools.clear();
    },
  };
}

export type PortProxy = ReturnType<typeof portProxy>;
