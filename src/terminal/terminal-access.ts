/**
 * Who may open an instance's terminal, read from the upgrade request itself (it never reaches Fastify's routes, so
 * the platform's hooks do not run for it): the same credentials as the API, with the console's CSRF rule carried
 * over to the upgrade.
 *
 * - `Authorization: Bearer <key>` (the CLI, API clients, tests): no Origin needed; a browser cannot put this header
 *   on a WebSocket, so it carries no ambient authority.
 * - The console's session cookie: only with an `Origin` that is this server's own (GPUPLANE_PUBLIC_URL's origin, or
 *   the request's Host with its scheme). A WebSocket is not bound by CORS and cannot carry the CSRF header, so a
 *   cross-site page could otherwise open a shell with the renter's cookie; its Origin is the one thing a browser
 *   will not let it forge. (A page on another host name that points at this server, DNS rebinding, has its own
 *   origin as Host too, but the browser sends it no cookie of ours.)
 *
 * Then the key must be allowed `instance_write` (a team key within its member's current role), must not be an
 * instance's own restricted key, and the instance must be the caller's: a personal instance of their own, or a team's
 * instance where they are a member whose role allows `instance_write` (in the team's context, or signed in
 * personally: the same rule as the instance's port URLs, src/ports/).
 */
import type { IncomingMessage } from 'node:http';
import { bearerKey, sessionCookie, type Principal } from '../platform/auth.js';
import { ApiError } from '../platform/errors.js';
import { allows } from '../platform/permissions.js';

/** The origins a cookie-authenticated upgrade may come from. */
export function ownOrigins(req: IncomingMessage, publicUrl: string, trustProxy: boolean): Set<string> {
  const out = new Set<string>([new URL(publicUrl).origin]);
  const host = req.headers.host;
  if (host) {
    const forwarded = trustProxy ? String(req.headers['x-forwarded-proto'] ?? '').split(',')[0].trim().toLowerCase() : '';
    const encrypted = (req.socket as { encrypted?: boolean }).encrypted === true;
    const scheme = forwarded === 'https' || forwarded === 'http' ? forwarded : encrypted ? 'https' : 'http';
    try {
      out.add(new URL(`${scheme}://${host}`).origin);
    } catch {
      // a Host that is no host name adds nothing
    }
  }
  return out;
}

/** The client's address as the API's request log and audit read it (`request.ip`: the proxy's word when trusted). */
export function clientAddress(req: IncomingMessage, trustProxy: boolean): string {
  if (trustProxy) {
    const xff = req.headers['x-forwarded-for'];
    const first = (Array.isArray(xff) ? xff[0] : xff)?.split(',')[0]?.trim();
    if (first) return first;
  }
  return req.socket.remoteAddress ?? '';
}

export interface Presented {
  secret: string;
  cookie: boolean;
}

/** The credential the request presents, or the ApiError that refuses it (401; 403 for a cross-site cookie). */
export function presentedCredential(req: IncomingMessage, origins: () => Set<string>): Presented {
  const header = bearerKey(req.headers.authorization);
  if (header !== null) return { secret: header, cookie: false };
  const cookie = sessionCookie(req.headers.cookie);
  if (cookie === null) throw new ApiError('auth_error', 'sign in first: the terminal needs the console\'s session, or "Authorization: Bearer <api key>"');
  const origin = req.headers.origin;
  if (typeof origin !== 'string' || !origins().has(origin)) {
    throw new ApiError('csrf_failed', 'the terminal opens only from this server\'s own console (the Origin of a session-cookie WebSocket must be this server\'s)');
  }
  return { secret: cookie, cookie: true };
}

/** Refuses a principal that may not open terminals at all (before the instance is looked up). */
export function checkPrincipal(principal: Principal | null, cookie: boolean): Principal {
  if (!principal || (cookie && principal.key.kind !== 'session')) throw new ApiError('auth_error', 'invalid or revoked API key');
  if (principal.key.kind === 'instance') {
    throw new ApiError('permission_denied', 'an instance API key can only start, stop or destroy its own instance');
  }
  if (!allows(principal.permissions, 'instance_write')) {
    throw new ApiError('permission_denied', 'this API key lacks the instance_write permission');
  }
  return principal;
}

/** An instance as the access rule reads it. */
export interface OwnedInstance {
  userId: number;
  teamId: number | null;
}

/**
 * Whether the principal may open the instance's terminal (`checkPrincipal` passed). `mayWrite(teamId, userId)`: the
 * user is a member of the team whose current role allows instance_write.
 */
export async function mayOpen(principal: Principal, inst: OwnedInstance, mayWrite: (teamId: number, userId: number) => Promise<boolean>): Promise<boolean> {
  if (principal.teamId !== null) return inst.teamId === principal.teamId;
  if (inst.teamId === null) return inst.userId === principal.user.id;
  return mayWrite(inst.teamId, principal.user.id);
}
