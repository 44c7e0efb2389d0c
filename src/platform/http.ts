import { LogController, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { TurnBatch } from './turn-batch.js';
import { ApiError, ERROR_STATUS, type ErrorBody, type ErrorCode } from './errors.js';

/** The app as route files see it: Fastify with the TypeBox type provider. */
export type TypedApp = ReturnType<typeof typed>;
export const typed = (app: FastifyInstance) => app.withTypeProvider<TypeBoxTypeProvider>();

/** The route config of every `/_emu/` route (contract §2): registered only in emulator mode, admin accounts only. */
export const EMU = { category: 'misc', adminOnly: true } as const;

/**
 * Paths whose next segment is a credential: `result_url` of request_logs carries its token in the path (the vastai
 * client fetches it without a key), so whoever reads a log line could fetch the log with it.
 */
const TOKEN_PATHS = ['/api/v0/instances/logs/'];

/** `?api_key=…` (older vastai clients append it) and a token in a path never reach a log. */
export function redactUrl(url: string): string {
  for (const prefix of TOKEN_PATHS) {
    if (url.startsWith(prefix)) url = prefix + url.slice(prefix.length).replace(/^[^/?#]+/, '[REDACTED]');
  }
  // Every redacted query form has `name=`: most URLs (no query) skip the regular expression; it runs on every request.
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
  if (first.keyword === 'reservedProperty') {
    return `${field ? `${field}.` : ''}${String(first.params?.reservedProperty)} is not an allowed field: the server keeps it`;
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

/** Fastify client-error statuses that have a code of their own in the table. */
const STATUS_CODE: Partial<Record<number, ErrorCode>> = {
  404: 'not_found',
  405: 'method_not_allowed',
  408: 'request_timeout',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  431: 'headers_too_large',
};

/** The one error handler: ApiError → its status and body; schema failures → 400; anything else → a bare 500. */
export function installErrorHandling(
  app: FastifyInstance,
  /** Answers a request no route matched before the JSON 404 does (the web console's pages), or returns undefined. */
  fallback?: (request: FastifyRequest, reply: FastifyReply) => FastifyReply | undefined,
): void {
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
      // Another of Fastify's client errors: its status where the table has a code for it, else a 400.
      const code = (err.statusCode && STATUS_CODE[err.statusCode]) || 'bad_request';
      return reply.status(ERROR_STATUS[code]).send({ success: false, error: code, msg: err.message } satisfies ErrorBody);
    }
    request.log.error({ err }, 'unhandled error');
    return reply.status(500).send({ success: false, error: 'internal_error', msg: 'internal error' } satisfies ErrorBody);
  });

  app.setNotFoundHandler((request, reply) => {
    if (fallback?.(request, reply)) return;
    reply.status(404).send({
      success: false,
      error: 'not_found',
      msg: `no route ${request.method} ${redactUrl(request.url.split('?')[0])}`,
    } satisfies ErrorBody);
  });
}

/** A `"__proto__":` key in JSON text, its letters possibly escaped (as secure-json-parse, Fastify's own parser, looks). */
const PROTO_KEY = /"(?:_|\\u005[Ff])(?:_|\\u005[Ff])(?:p|\\u0070)(?:r|\\u0072)(?:o|\\u006[Ff])(?:t|\\u0074)(?:o|\\u006[Ff])(?:_|\\u005[Ff])(?:_|\\u005[Ff])"\s*:/;

/** How much of a deep key's path an error message shows: its start, `…`, and its end (the key itself). */
const MAX_PATH_SHOWN = 48;
const MAX_PATH_TAIL = 16;

/**
 * The path of a `__proto__` key in a parsed value, if any. A walk with its own stack, not recursion: JSON.parse
 * builds 200,000 levels of nesting within the body limit, and a recursive walk of them overflowed the call stack (a
 * 500; issue 29 item 21). Each entry's path is built only when its key is found, from its parent chain.
 */
function protoPath(value: unknown, path: string): string | undefined {
  type Entry = { v: unknown; key: string; up: Entry | undefined };
  const stack: Entry[] = [{ v: value, key: path, up: undefined }];
  while (stack.length) {
    const e = stack.pop()!;
    if (typeof e.v !== 'object' || e.v === null) continue;
    if (Object.hasOwn(e.v, '__proto__')) {
      const parts: string[] = ['.__proto__'];
      for (let at: Entry | undefined = e; at; at = at.up) parts.push(at.key);
      const whole = parts.reverse().join('');
      return whole.length > MAX_PATH_SHOWN ? `${whole.slice(0, MAX_PATH_SHOWN)}…${whole.slice(-MAX_PATH_TAIL)}` : whole;
    }
    const list = Array.isArray(e.v);
    for (const [k, v] of Object.entries(e.v).reverse()) {
      if (typeof v === 'object' && v !== null) stack.push({ v, key: list ? `[${k}]` : `.${k}`, up: e });
    }
  }
  return undefined;
}

/**
 * JSON bodies: an empty body (common on DELETE and GET from the vastai client) is no body; anything unparsable is a
 * 400 that says so. A `__proto__` key at any depth is a 400 naming it: JSON.parse makes it an own property, and a
 * later spread or Object.assign of that object would set a prototype (Fastify's own parser refuses it too).
 */
export function installJsonParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = (body as string).trim();
    if (text === '') return done(null, undefined);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return done(new ApiError('bad_request', 'malformed JSON body'), undefined);
    }
    const proto = PROTO_KEY.test(text) ? protoPath(value, 'body') : undefined;
    if (proto) return done(new ApiError('bad_request', `${proto} is not an allowed field`), undefined);
    done(null, value);
  });
}

/**
 * Replies carry `Content-Type: application/json` exactly: the vastai client refuses `; charset=utf-8` on offer search.
 * Every reply is then written at the end of its event-loop turn, with the others of that turn (platform/turn-batch.ts).
 */
export function installReplySending(app: FastifyInstance): void {
  const batch = new TurnBatch((err) => app.log.error({ err }, 'a reply could not be written'));
  const send = (reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void) => () => {
    try {
      done(null, payload);
    } catch (err) {
      // Its client would wait for an answer that never comes.
      reply.raw.destroy();
      throw err;
    }
  };
  // A callback hook, not an async one: it runs on every reply and needs no promise.
  app.addHook('onSend', (_request, reply, payload, done) => {
    const type = reply.getHeader('content-type');
    if (typeof type === 'string' && type.startsWith('application/json')) reply.header('content-type', 'application/json');
    batch.add(send(reply, payload, done));
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
