/**
 * The HTTP upgrades the tunnels feature answers on the API's own port (its "routes"): an agent's tunnel
 * (`GET /api/v0/agent/tunnel/`, `Upgrade: gpuplane-tunnel/1`, its machine key as on every agent call) and another
 * server process's hop (tunnels-hop.ts). Node hands an upgrade request to the server's 'upgrade' listener instead of
 * the router, so the refusals are written here, as the API's error object with the error table's status.
 */
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { bearerKey } from '../platform/auth.js';
import { ApiError } from '../platform/errors.js';
import { PING_INTERVAL_HEADER, TUNNEL_PATH, TUNNEL_UPGRADE } from '../protocol/tunnel-wire.js';
import { HOP_AUTH_HEADER, HOP_PATH, HOP_UPGRADE } from './tunnels-hop.js';
import type { TunnelsLog, TunnelsService } from './tunnels-service.js';

/** Writes the error object as a whole HTTP/1.1 reply and closes the socket. */
function refuse(socket: Socket, err: ApiError): void {
  const body = JSON.stringify(err.body());
  if (!socket.writable) return void socket.destroy();
  socket.end(
    `HTTP/1.1 ${err.status} ${STATUS_CODES[err.status] ?? 'Error'}\r\nContent-Type: application/json; charset=utf-8\r\n`
      + `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

function switching(socket: Socket, protocol: string, extra: Record<string, string> = {}): void {
  const lines = Object.entries(extra).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  socket.write(`HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ${protocol}\r\n${lines}\r\n`);
}

const pathOf = (url: string | undefined) => {
  const p = (url ?? '').split('?')[0].replace(/\/+/g, '/');
  return p.endsWith('/') ? p : `${p}/`;
};

/** The server's 'upgrade' listener. `closing()`: the server is shutting down (every upgrade is refused with 503). */
export function tunnelsUpgrade(tunnels: TunnelsService, log: TunnelsLog, closing: () => boolean) {
  return (req: IncomingMessage, socket: Socket, head: Buffer): void => {
    socket.on('error', () => undefined);
    const protocol = String(req.headers.upgrade ?? '').trim().toLowerCase();
    const path = pathOf(req.url);
    void (async () => {
      if (closing()) throw new ApiError('service_unavailable', 'the server is shutting down');
      if (req.method !== 'GET') throw new ApiError('method_not_allowed', `${req.method} does not open a tunnel; use GET`);
      if (path === TUNNEL_PATH) {
        if (protocol !== TUNNEL_UPGRADE) throw new ApiError('bad_request', `the tunnel needs "Upgrade: ${TUNNEL_UPGRADE}"`);
        const machineId = await tunnels.authenticate(bearerKey(req.headers.authorization));
        if (socket.destroyed) return;
        switching(socket, TUNNEL_UPGRADE, { [PING_INTERVAL_HEADER]: String(tunnels.pingIntervalMs / 1000) });
        tunnels.accept(machineId, socket, head);
        return;
      }
      if (path === HOP_PATH) {
        if (protocol !== HOP_UPGRADE) throw new ApiError('bad_request', `a hop needs "Upgrade: ${HOP_UPGRADE}"`);
        const header = req.headers[HOP_AUTH_HEADER];
        if (!(await tunnels.hop.verify(typeof header === 'string' ? header : undefined))) {
          log.warn({ remote: socket.remoteAddress }, 'a tunnel hop with a bad or reused signature was refused');
          throw new ApiError('auth_error', 'the hop is not signed with this cluster\'s hop secret');
        }
        if (socket.destroyed) return;
        switching(socket, HOP_UPGRADE);
        tunnels.hop.serve(socket, head);
        return;
      }
      throw new ApiError('not_found', `nothing to upgrade at ${path}`);
    })().catch((err) => {
      if (err instanceof ApiError) return refuse(socket, err);
      log.warn({ err }, 'an upgrade request failed');
      refuse(socket, new ApiError('internal_error', 'internal error'));
    });
  };
}
