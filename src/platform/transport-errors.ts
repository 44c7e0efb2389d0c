/**
 * The replies Fastify and Node's HTTP server make on their own, before any route or error handler runs: a URL the
 * router rejects, a request Node cannot parse, a request that arrives while the server closes. Each is the error
 * object too (contract §4: every error reply is `{success: false, error, msg}`, never another shape), with its code
 * from the one table in errors.ts.
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, type ErrorCode } from './errors.js';

/** Longest path parameter the router takes (Fastify's default, stated): longer than any id, token or name here. */
export const MAX_PARAM_LENGTH = 100;

/**
 * The router's own errors. A parameter over MAX_PARAM_LENGTH is a 400 `bad_request`, not Fastify's 414: it is a
 * value out of range like any other (the same text in a body or query string fails its schema's maxLength with a
 * 400), and 414 means a URI the server cannot take at all, which is Node's header limit (431 below).
 */
const ROUTER_ERRORS: Record<string, [ErrorCode, string]> = {
  FST_ERR_MAX_PARAM_LENGTH: ['bad_request', `a path parameter is longer than ${MAX_PARAM_LENGTH} characters`],
  FST_ERR_BAD_URL: ['bad_request', 'the path is not valid percent-encoded UTF-8'],
};

// As bytes: Fastify appends `; charset=utf-8` to a JSON string's type, and the router's replies run no onSend hook
// (installReplySending) to take it off again; the vastai client wants the type exactly.
const json = (reply: FastifyReply, e: ApiError) => reply.status(e.status).type('application/json').send(Buffer.from(JSON.stringify(e.body())));

/** Fastify's `frameworkErrors` option: the router's errors (bad URL encoding, too long a parameter). */
export function frameworkErrors(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const known = err.code ? ROUTER_ERRORS[err.code] : undefined;
  if (!known) request.log.error({ err }, 'router error');
  json(reply, known ? new ApiError(known[0], known[1]) : new ApiError('internal_error', 'internal error'));
}

/** Node's `clientError`: a request it cannot parse or that does not arrive in time, answered on the raw socket. */
export function clientErrorHandler(err: Error & { code?: string }, socket: Socket): void {
  // A reset connection has no one to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const e =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new ApiError('request_timeout', 'the request did not arrive in time')
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? new ApiError('headers_too_large', 'the request line and headers are too large')
        : new ApiError('bad_request', 'malformed HTTP request');
  const body = JSON.stringify(e.body());
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${e.status} ${STATUS_CODES[e.status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Connection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}

/**
 * A request that arrives while the server closes (on a kept-alive connection) is a 503 `service_unavailable` error
 * object, in place of Fastify's own 503 body (the app sets `return503OnClosing: false`). Registered before every other
 * onRequest hook, so nothing else runs for such a request.
 */
export function installClosingReply(app: FastifyInstance): void {
  let closing = false;
  // preClose runs as Fastify starts closing, before the server stops accepting.
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  // A callback hook: it runs on every request and needs no promise.
  app.addHook('onRequest', (_request, reply, done) => {
    if (!closing) return done();
    reply.header('connection', 'close');
    json(reply, new ApiError('service_unavailable', 'the server is shutting down; retry'));
  });
}
