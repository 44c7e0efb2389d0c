import negotiate from '@fastify/accept-negotiator';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { ApiError } from '../platform/errors.js';
import type { TypedApp } from '../platform/http.js';
import { ErrorReply } from '../platform/schemas.js';
import { ASSETS_DIR, type ConsoleFile } from './console-files.js';

/**
 * The page's own rules for the browser: scripts, styles and requests only from this origin (no inline script, so an
 * injected `<script>` does nothing) and no inline style either (React sets styles through the DOM, which the policy
 * allows), never inside another site's frame (clickjacking), QR codes as data: images.
 */
const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "frame-ancestors 'none'; base-uri 'self'; form-action 'self'; object-src 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'same-origin',
};

/** Paths that belong to the API or the server's own pages: an unknown one stays a JSON 404, never the console. */
const NOT_CONSOLE = /^\/(api|_emu|assets|docs)(\/|$)/;

const CONSOLE = { category: 'public', noVirtualClock: true } as const;

/**
 * Whether a request's Accept-style header takes `value`, weights read (`gzip;q=0` and `text/html;q=0` refuse), by
 * Fastify's own negotiator. Not @fastify/static: the files are served from memory, gzipped once on first use (it
 * serves only files compressed ahead), and its routes would not carry the permission config every route declares.
 */
const takes = (header: string | string[] | undefined, value: string) => typeof header === 'string' && negotiate(header, [value]) === value;

function send(request: FastifyRequest, reply: FastifyReply, file: ConsoleFile): FastifyReply {
  const gz = takes(request.headers['accept-encoding'], 'gzip') ? file.gzip() : null;
  reply.header('content-type', file.type).header('cache-control', file.cacheControl).header('vary', 'accept-encoding');
  if (file.type.startsWith('text/html')) reply.headers(PAGE_HEADERS);
  else reply.header('x-content-type-options', 'nosniff');
  if (gz) reply.header('content-encoding', 'gzip');
  return reply.send(gz ?? file.body);
}

/**
 * The web console (issue 15), served by this process from the build's files: `/` and every console route is
 * index.html (the app routes in the browser), `/assets/…` the hashed scripts and styles. The console is a client like
 * any other: it has no routes of its own beyond its files.
 */
export async function consoleRoutes(app: TypedApp, { files }: { files: Map<string, ConsoleFile> | undefined }): Promise<void> {
  if (!files) return;
  const index = files.get('/index.html')!;
  const schema = { hide: true, response: { 404: ErrorReply } };
  app.get('/', { config: CONSOLE, schema: { ...schema, response: { 200: Type.Any(), 404: ErrorReply } } }, (request, reply) => send(request, reply, index));
  app.get(`/${ASSETS_DIR}/*`, { config: CONSOLE, schema: { ...schema, response: { 200: Type.Any(), 404: ErrorReply } } }, (request, reply) => {
    const file = files.get(request.url.split('?')[0]);
    if (!file) throw new ApiError('not_found', `no console file ${request.url.split('?')[0]}`);
    return send(request, reply, file);
  });
  // Files at the top of the build (the icon, robots.txt): each its own route.
  for (const [path, file] of files) {
    if (path === '/index.html' || path.startsWith(`/${ASSETS_DIR}/`) || path.slice(1).includes('/')) continue;
    app.get(path, { config: CONSOLE, schema: { ...schema, response: { 200: Type.Any() } } }, (request, reply) => send(request, reply, file));
  }
}

/**
 * The not-found handler's fallback (platform/http.ts): a browser asking for a page at a console route (`/offers`,
 * `/instances/12`) gets index.html, whose script shows that route. Only GET or HEAD asking for HTML outside the API:
 * an API client's unknown path (`Accept: application/json`, curl's `*∕*`) still gets the JSON 404.
 */
export function consoleFallback(files: Map<string, ConsoleFile> | undefined) {
  const index = files?.get('/index.html');
  if (!index) return undefined;
  return (request: FastifyRequest, reply: FastifyReply): FastifyReply | undefined => {
    if (request.method !== 'GET' && request.method !== 'HEAD') return undefined;
    if (NOT_CONSOLE.test(request.url) || !takes(request.headers.accept, 'text/html')) return undefined;
    return send(request, reply, index);
  };
}
