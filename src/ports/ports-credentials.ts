/**
 * The port credentials' pure parts (design "Port access credentials"): the signed cookie, reading what a request
 * presents, and taking our credentials out before a request goes on to the renter's app (the app never sees them, so
 * it cannot leak them in a log or a page).
 *
 * Cookie value: `v1.<instance>.<port>.<subject>.<expires>.<signature>`, the signature an HMAC-SHA256 of the rest with
 * the cluster's cookie secret. Bound to its instance port (a cookie copied to another port's host is refused) and to
 * its subject: `u<user id>` (a console grant: the user's access is re-checked), `t<mark>` (a per-port token: dies
 * with the token) or `j<mark>` (Jupyter's token: dies with it), where a mark is the first 16 hex digits of the
 * token's SHA-256.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { sha256Hex } from '../platform/crypto.js';
import { MAX_RETURN_PATH, PORT_COOKIE, PORT_TOKEN_HEADER, PORT_TOKEN_PARAM } from './ports-constants.js';

export type CookieSubject = { kind: 'u'; userId: number } | { kind: 't' | 'j'; mark: string };

export interface PortCookie {
  instanceId: number;
  port: number;
  subject: CookieSubject;
  /** Unix seconds. */
  expiresAt: number;
}

/** The part of a token's digest a cookie names it by. */
export function tokenMark(tokenHash: string): string {
  return tokenHash.slice(0, 16);
}

function signature(secret: string, payload: string): Buffer {
  return createHmac('sha256', secret).update(payload).digest();
}

function subjectText(s: CookieSubject): string {
  return s.kind === 'u' ? `u${s.userId}` : `${s.kind}${s.mark}`;
}

export function signCookie(secret: string, c: PortCookie): string {
  const payload = `v1.${c.instanceId}.${c.port}.${subjectText(c.subject)}.${Math.floor(c.expiresAt)}`;
  return `${payload}.${signature(secret, payload).toString('base64url')}`;
}

const COOKIE_VALUE = /^v1\.([0-9]{1,15})\.([0-9]{1,5})\.(u[0-9]{1,15}|[tj][0-9a-f]{16})\.([0-9]{1,12})\.([A-Za-z0-9_-]{43})$/;

/** The cookie's subject when it is ours, signed, unexpired and for this instance port; else null. */
export function verifyCookie(secret: string, value: string, instanceId: number, port: number, now: number): CookieSubject | null {
  const m = COOKIE_VALUE.exec(value);
  if (!m) return null;
  const payload = value.slice(0, value.lastIndexOf('.'));
  const want = signature(secret, payload);
  const got = Buffer.from(m[5], 'base64url');
  if (got.length !== want.length || !timingSafeEqual(got, want)) return null;
  if (Number(m[1]) !== instanceId || Number(m[2]) !== port || Number(m[4]) <= now) return null;
  const s = m[3];
  return s[0] === 'u' ? { kind: 'u', userId: Number(s.slice(1)) } : { kind: s[0] as 't' | 'j', mark: s.slice(1) };
}

/** The Set-Cookie header of a port cookie: host-only (no Domain), HttpOnly, Lax (the grant arrives by a top-level navigation from the console). */
export function setCookieHeader(value: string, maxAgeS: number, secure: boolean): string {
  return `${PORT_COOKIE}=${value}; Path=/; Max-Age=${maxAgeS}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}

/** What a request to a port host presents. Each is the raw value; none is trusted yet. */
export interface Presented {
  cookie?: string;
  headerToken?: string;
  queryToken?: string;
  /** `?token=` (Jupyter's own parameter; passed through untouched). */
  jupyterQuery?: string;
  /** `Authorization: token <t>` (Jupyter's API clients; passed through untouched). */
  jupyterHeader?: string;
}

/** The cookie pairs of a Cookie header, as sent (names trimmed). */
function cookiePairs(header: string): { name: string; raw: string }[] {
  return header.split(';').map((raw) => ({ name: raw.split('=', 1)[0].trim(), raw: raw.trim() })).filter((p) => p.raw !== '');
}

/** The query string's parameters (the first of each name), or an empty map when the URL has none. */
function queryOf(url: string): URLSearchParams {
  const q = url.indexOf('?');
  return new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
}

export function presentedBy(headers: IncomingHttpHeaders, url: string): Presented {
  const p: Presented = {};
  if (typeof headers.cookie === 'string') {
    const ours = cookiePairs(headers.cookie).find((c) => c.name === PORT_COOKIE);
    if (ours) p.cookie = ours.raw.slice(ours.raw.indexOf('=') + 1).trim();
  }
  const h = headers[PORT_TOKEN_HEADER];
  if (typeof h === 'string' && h !== '') p.headerToken = h.trim();
  if (url.includes('?')) {
    const q = queryOf(url);
    const t = q.get(PORT_TOKEN_PARAM);
    if (t) p.queryToken = t;
    const j = q.get('token');
    if (j) p.jupyterQuery = j;
  }
  const auth = headers.authorization;
  if (typeof auth === 'string' && /^token\s+\S+$/i.test(auth.trim())) p.jupyterHeader = auth.trim().split(/\s+/)[1];
  return p;
}

/** The Cookie header without ours (undefined when nothing is left). */
export function cookieWithoutOurs(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const rest = cookiePairs(header).filter((c) => c.name !== PORT_COOKIE).map((c) => c.raw);
  return rest.length ? rest.join('; ') : undefined;
}

/** The URL (path and query) without `?gpuplane_token=`; the rest of the query as it was written. */
export function urlWithoutToken(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const kept = url.slice(q + 1).split('&').filter((kv) => kv !== '' && decodeURIComponentSafe(kv.split('=', 1)[0]) !== PORT_TOKEN_PARAM);
  return kept.length ? `${url.slice(0, q)}?${kept.join('&')}` : url.slice(0, q);
}

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return s;
  }
}

/**
 * A path a redirect may go to on the same host: one leading `/` (never `//host` or `/\host`, which a browser reads as
 * another site), no control characters, bounded length. Anything else is `/`.
 */
export function safeReturnPath(path: string | null | undefined): string {
  if (!path || path.length > MAX_RETURN_PATH || !path.startsWith('/') || path.startsWith('//') || path.startsWith('/\\')) return '/';
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f\\]/.test(path)) return '/';
  return path;
}

/** Whether a request came from a browser navigating (it gets a redirect to sign in, not a JSON refusal). */
export function isBrowserNavigation(method: string | undefined, headers: IncomingHttpHeaders): boolean {
  if (method !== 'GET' && method !== 'HEAD') return false;
  const accept = headers.accept;
  return typeof accept === 'string' && accept.includes('text/html');
}

export { sha256Hex as tokenHash };
