import { LogController, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { ApiError, type ErrorBody } from './errors.js';

/** `?api_key=…` (older vastai clients append it) never reaches a log. */
export function redactUrl(url: string): string {
  // Every redacted form has `name=`: most URLs (no query) skip the regular expression; it runs on every request.
  if (!url.includes('=')) return url;
  return url.replace(/([?&](?:api_key|key|secret|session_key|tfa_secret|code|backup_code|password|docker_login_pass|token)=)[^&#]*/gi, '$1[REDACTED]');
}

interface AjvError {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
}

/** Turns a schema failure into a message that names the field: `body.disk must be number`. */
function validationMessage(err: FastifyError): string {
  const first = (err.validation as AjvError[] | undefined)?.[0];
  const where = err.validationContext ?? 'body';
  if (!first) return err.message;
  const path = (first.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.');
  const field = [where, path].filter(Boolean).join('.');
  if (first.keyword === 'required') return `${field ? `${field}.` : ''}${String(first.params?.missingProperty)} is required`;
  if (first.keyword === 'additionalProperties') {
    return `${field ? `${field}.` : ''}${String(first.params?.additionalProperty)} is not an allowed field`;
  }
  if (first.keyword === 'enum') {
    return `${field} must be one of ${(first.params?.allowedValues as unknown[] | undefined)?.map((v) => JSON.stringify(v)).join(', ')}`;
  }
  return `${field} ${first.message ?? 'is invalid'}`;
}

const FASTIFY_CODES: Record<string, [number, ApiError['code'], string]> = {
  FST_ERR_CTP_BODY_TOO_LARGE: [413, 'payload_too_large', 'request body is too large'],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: [415, 'unsupported_media_type', 'send the body as application/json'],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: [400, 'bad_request', 'Content-Length does not match the body'],
  FST_ERR_CTP_EMPTY_JSON_BODY: [400, 'bad_request', 'empty JSON body'],
  FST_ERR_CTP_INVALID_JSON_BODY: [400, 'bad_request', 'malformed JSON body'],
};

/** The one error handler: ApiError → its status and body; schema failures → 400; anything else → a bare 500. */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    if (err instanceof ApiError) {
      if (err.status >= 500) request.log.error({ err }, 'service error');
      return reply.status(err.status).headers(err.headers).send(err.body());
    }
    if (err.validation) {
      return reply.status(400).send({ success: false, error: 'bad_request', msg: validationMessage(err) } satisfies ErrorBody);
    }
    const known = err.code ? FASTIFY_CODES[err.code] : undefined;
    if (known) return reply.status(known[0]).send({ success: false, error: known[1], msg: known[2] } satisfies ErrorBody);
    if (err instanceof SyntaxError || (err.statusCode && err.statusCode >= 400 && err.statusCode < 500)) {
      return reply.status(400).send({ success: false, error: 'bad_request', msg: err.message } satisfies ErrorBody);
    }
    request.log.error({ err }, 'unhandled error');
    return reply.status(500).send({ success: false, error: 'internal_error', msg: 'internal error' } satisfies ErrorBody);
  });

  app.setNotFoundHandler((request, reply) => {
    reply.status(404).send({
      success: false,
      error: 'not_found',
      msg: `no route ${request.method} ${redactUrl(request.url.split('?')[0])}`,
    } satisfies ErrorBody);
  });
}

/**
 * JSON bodies: an empty body (common on DELETE and GET from the vastai client) is no body; anything unparsable is a
 * 400 that says so.
 */
export function installJsonParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = (body as string).trim();
    if (text === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch {
      done(new ApiError('bad_request', 'malformed JSON body'), undefined);
    }
  });
}

/**
 * Replies carry `Content-Type: application/json` exactly: the vastai client refuses `; charset=utf-8` on offer search.
 */
export function installExactJsonContentType(app: FastifyInstance): void {
  // A callback hook, not an async one: it runs on every reply and needs no promise.
  app.addHook('onSend', (_request, reply, payload, done) => {
    const type = reply.getHeader('content-type');
    if (typeof type === 'string' && type.startsWith('application/json')) reply.header('content-type', 'application/json');
    done(null, payload);
  });
}

/**
 * One structured line per request, with the URL redacted and no header values. Fastify calls its LogController's
 * `requestCompleted` when every response has finished (sent, or failed); writing the line there rather than in an
 * onResponse hook saves running a hook on every request. Fastify's own request lines stay off.
 */
export class RequestLog extends LogController {
  /** `onCompleted` also sees every finished request, with its milliseconds (the request metrics). */
  constructor(private readonly onCompleted?: (request: FastifyRequest, reply: FastifyReply, ms: number) => void) {
    super({ disableRequestLogging: true });
  }

  override requestCompleted(_error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const ms = reply.elapsedTime;
    request.log.info(
      {
        method: request.method,
        url: redactUrl(request.url),
        status: reply.statusCode,
        ms: Math.round(ms * 10) / 10,
        user: request.principal?.user.id,
      },
      'request',
    );
    this.onCompleted?.(request, reply, ms);
  }
}
