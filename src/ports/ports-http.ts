/**
 * Requests to instance port hosts (`<id>-<port>.<domain>`, ports-contract.ts), taken before the API's router ever
 * sees them (app.ts hands each request here first): the console grant's redemption, the credential check
 * (ports-service.ts `admit`), then the proxy (ports-proxy.ts) or, for an HTTP upgrade (WebSocket or any other), the
 * request head written to a tunnel stream and the raw bytes spliced both ways.
 *
 * Refusals: `{success: false, error, msg}` with the error's status; a browser navigating without a (valid) credential
 * is sent to the console page that makes a grant (or signs in first).
 *
 * Node's `requestTimeout` (GPUPLANE_REQUEST_TIMEOUT) bounds how long a request's body may take to arrive, for the API.
 * An upload to an app may rightly take longer: while a port request's body is being passed on, its socket is in
 * `streaming`, and the app's clientError handler lets the timeout pass for it (app.ts). The timeout's check then drops
 * the connection from its list for that request; headers still have their own timeout, before the host is known.
 */
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { ApiError } from '../platform/errors.js';
import type { TunnelsApi } from '../tunnels/tunnels-contract.js';
import { parsePortHost } from './ports-contract.js';
import { GRANT_PATH } from './ports-constants.js';
import { isBrowserNavigation, presentedBy, urlWithoutToken } from './ports-credentials.js';
import { forwardHeaders, portProxy, tunnelRefusal, type PortRoute } from './ports-proxy.js';
import type { PortsService, PortTarget } from './ports-service.js';

export interface PortsHttpDeps {
  service: PortsService;
  tunnels(): TunnelsApi;
  config: Pick<Config, 'portUrls' | 'trustProxy'>;
  log: Logger;
}

function jsonBody(e: ApiError): string {
  return JSON.stringify(e.body());
}

export function portsHttp(deps: PortsHttpDeps) {
  const { service, config, log } = deps;
  const forwardedProto = config.portUrls.startsWith('https:') ? 'https' : 'http';
  const proxy = portProxy({ tunnels: deps.tunnels, forwardedProto, trustForwarded: config.trustProxy });
  /** Sockets whose current request is a port request still receiving its body (the request timeout spares them). */
  const streaming = new WeakSet<Socket>();

  function refuse(res: ServerResponse, e: ApiError, extraHeaders: Record<string, string> = {}): void {
    if (res.headersSent) return void res.destroy();
    const body = jsonBody(e);
    res.writeHead(e.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store', ...extraHeaders, ...e.headers });
    res.end(body);
  }

  function redirect(res: ServerResponse, location: string, setCookie?: string): void {
    res.writeHead(302, { location, 'cache-control': 'no-store', 'content-length': 0, ...(setCookie ? { 'set-cookie': setCookie } : {}) });
    res.end();
  }

  async function serve(req: IncomingMessage, res: ServerResponse, t: PortTarget): Promise<void> {
    const url = req.url ?? '/';
    const path = url.split('?', 1)[0];
    if (path === GRANT_PATH) {
      const q = new URLSearchParams(url.slice(path.length + 1));
      const r = await service.redeemGrant(t, q.get('g'), q.get('path'));
      req.resume();
      if (!r.ok) return refuse(res, r.error);
      return redirect(res, r.location, r.setCookie);
    }
    const a = await service.admit(t, presentedBy(req.headers, url), req.method ?? 'GET', url);
    if (!a.ok) {
      // The body of a refused request is read and dropped, so the connection can carry the next one.
      req.resume();
      if (a.signIn && isBrowserNavigation(req.method, req.headers)) return redirect(res, service.signInUrl(t, url));
      return refuse(res, a.error);
    }
    if (a.redirectTo !== undefined) {
      req.resume();
      return redirect(res, a.redirectTo, a.setCookie);
    }
    const socket = req.socket;
    if (!req.complete) {
      streaming.add(socket);
      const done = () => streaming.delete(socket);
      req.once('end', done);
      req.once('close', done);
    }
    proxy.forward(req, res, a, a.setCookie, (e) => refuse(res, e));
  }

  /** Says a refusal on the raw socket of an upgrade request, and closes it. */
  function refuseRaw(socket: Socket, e: ApiError, location?: string): void {
    if (!socket.writable) return void socket.destroy();
    const body = location ? '' : jsonBody(e);
    const status = location ? 302 : e.status;
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${location ? `Location: ${location}\r\n` : 'Content-Type: application/json\r\n'}` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }

  async function serveUpgrade(req: IncomingMessage, socket: Socket, head: Buffer, t: PortTarget): Promise<void> {
    const url = req.url ?? '/';
    const a = await service.admit(t, presentedBy(req.headers, url), req.method ?? 'GET', url);
    if (!a.ok) return refuseRaw(socket, a.error);
    const route: PortRoute = a;
    let stream;
    try {
      stream = (await deps.tunnels().open(route.machineId, { kind: 'tcp', instanceId: route.instanceId, port: route.port }, {
        source: `${socket.remoteAddress ?? ''}:${socket.remotePort ?? 0}`,
      })).stream;
    } catch (err) {
      return refuseRaw(socket, tunnelRefusal(route, err));
    }
    if (socket.destroyed) return void stream.destroy();
    // The request head as the app must see it: our credentials out, the forwarded headers in, the upgrade kept.
    const headers = forwardHeaders(req, forwardedProto, config.trustProxy);
    const lines = [`${req.method} ${urlWithoutToken(url)} HTTP/1.1`];
    for (const [name, value] of Object.entries(headers)) for (const v of [value].flat()) lines.push(`${name}: ${v}`);
    lines.push(`connection: ${String(req.headers.connection ?? 'Upgrade')}`, `upgrade: ${String(req.headers.upgrade)}`);
    stream.write(`${lines.join('\r\n')}\r\n\r\n`);
    if (head.length) stream.write(head);
    const cut = (other: { destroyed: boolean; destroy(): void }) => () => {
      if (!other.destroyed) other.destroy();
    };
    socket.on('error', cut(stream));
    stream.on('error', cut(socket));
    socket.on('close', cut(stream));
    stream.on('close', cut(socket));
    socket.setNoDelay(true);
    socket.pipe(stream);
    stream.pipe(socket);
  }

  return {
    /** Takes the request when its host is an instance port's (true), else leaves it to the API (false). */
    request(req: IncomingMessage, res: ServerResponse): boolean {
      const t = parsePortHost(config, req.headers.host);
      if (!t) return false;
      serve(req, res, t).catch((err: unknown) => {
        log.error({ err, instance: t.instanceId, port: t.port }, 'port proxy: a request failed');
        if (!res.headersSent) {
          const body = JSON.stringify({ success: false, error: 'internal_error', msg: 'internal error' });
          res.writeHead(500, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
        } else res.destroy();
      });
      return true;
    },

    /** app.ts's `ports` upgrade handler: WebSockets (and any upgrade) to a port host. */
    upgrade(req: IncomingMessage, socket: Socket, head: Buffer): boolean {
      const t = parsePortHost(config, req.headers.host);
      if (!t) return false;
      socket.on('error', () => undefined);
      serveUpgrade(req, socket, head, t).catch((err: unknown) => {
        log.error({ err, instance: t.instanceId, port: t.port }, 'port proxy: an upgrade failed');
        socket.destroy();
      });
      return true;
    },

    /** Whether the socket's current request is a port request still sending its body (the request timeout spares it). */
    streaming: (socket: Socket): boolean => streaming.has(socket),

    close: () => proxy.close(),
  };
}

export type PortsHttp = ReturnType<typeof portsHttp>;
