/**
 * Issue 34 item 5 (recorder): with GPUPLANE_EMU_RECORD=FILE (emulator mode), every API call the server answers is
 * appended to FILE as one JSON line, secrets replaced (recorder-redact.ts), for `gpuplane emu replay FILE`.
 *
 * Recorded: the API (`/api/…`), the serverless SDK's routes, and the emulator control API (`/_emu/…`, marked
 * `control`: a session that advances the clock or creates users needs those calls to replay). Not recorded: probes and
 * metrics, the OpenAPI document, the web console's files, the agents' own protocol (`/api/v0/agent/…`: hosts, not
 * clients), the requests a scheduled job replays inside a clock advance (the advance is recorded, and replaying it
 * runs them again), and what never reaches the router (instance ports, WebSocket upgrades).
 *
 * The body is copied before validation (schema defaults are added in place by then); the reply is the serialized
 * string the onSend hooks see. Each line is written synchronously when the reply has gone: the file is complete and
 * in order whenever a client reads it, at some cost per request that an emulator can afford.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../../platform/clock.js';
import { KEPT_REPLY_HEADERS, PLACEHOLDER, Redactor } from './recorder-redact.js';
import { RECORDING_FORMAT, RECORDING_VERSION, type RecordedCall, type RecordingHeader } from './recorder-format.js';

export interface RecorderOptions {
  file: string;
  clock: Clock;
  seed: number;
  simMachines: number;
  /** Route URLs never recorded, besides those the rules above leave out (e.g. the OpenAPI document). */
  skipUrls?: readonly string[];
  /** The header a scheduled job's replayed request carries (app.ts). */
  replayHeader: string;
}

/** What is kept of a request between its hooks. */
interface Pending {
  /** The route's bodies are not recorded (OMITTED_PREFIXES). */
  omitted: boolean;
  body: string | undefined;
  reply: { kind: RecordedCall['reply_kind']; text?: string };
}

const PENDING = Symbol('gpuplane.recorder');
type WithPending = FastifyRequest & { [PENDING]?: Pending };

/** Route URLs (as registered) left out. */
const SKIPPED_URLS = new Set(['/healthz', '/readyz', '/metrics']);
const SKIPPED_PREFIXES = ['/api/v0/agent/'];
/**
 * Routes recorded without their bodies and replies: the emulator's whole state (issue 34 item 2, `emu save` and
 * `emu restore`) carries every secret of the world in forms no field name gives away (the key that seals secrets,
 * sealed values, key hashes). A replay sends them without a body (see the README).
 */
const OMITTED_PREFIXES = ['/_emu/state'];
/** Without a route (a 404), only what looks like an API call is recorded (not a browser's favicon). */
const API_PATH = /^\/(api|_emu)(\/|$)/;

/** Installs the recorder's hooks; call before the routes are registered. */
export function installRecorder(app: FastifyInstance, options: RecorderOptions): void {
  const { file, clock } = options;
  const skipped = new Set([...SKIPPED_URLS, ...(options.skipUrls ?? [])]);
  const resumed = resume(file);
  const redactor = new Redactor(resumed.nextSecret);
  let seq = resumed.lastSeq;
  const header: RecordingHeader = {
    format: RECORDING_FORMAT, version: RECORDING_VERSION, started_at: clock.now(), clock: clock.kind, seed: options.seed, sim_machines: options.simMachines,
  };
  // A file that cannot be written fails the start, with its path, rather than a session recorded into nothing.
  appendFileSync(file, `${JSON.stringify(header)}\n`);

  const recorded = (request: FastifyRequest): boolean => {
    if (request.headers[options.replayHeader] !== undefined) return false;
    const url = request.routeOptions.url;
    if (url === undefined) return API_PATH.test(request.url);
    if (request.routeOptions.config?.noVirtualClock) return false; // probes and the console's files
    if (skipped.has(url) || SKIPPED_PREFIXES.some((p) => url.startsWith(p))) return false;
    return true;
  };

  app.addHook('onRequest', (request, _reply, done) => {
    if (recorded(request)) {
      const url = request.routeOptions.url ?? '';
      const omitted = OMITTED_PREFIXES.some((p) => url === p || url.startsWith(`${p}/`));
      (request as WithPending)[PENDING] = { omitted, body: undefined, reply: { kind: 'empty' } };
    }
    done();
  });
  app.addHook('preValidation', (request, _reply, done) => {
    const p = (request as WithPending)[PENDING];
    if (p && !p.omitted && request.body !== undefined) p.body = bodyText(request.body);
    done();
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    const p = (request as WithPending)[PENDING];
    if (p) p.reply = p.omitted ? { kind: 'omitted' } : replyOf(payload, String(reply.getHeader('content-type') ?? ''));
    done(null, payload);
  });
  app.addHook('onResponse', (request, reply, done) => {
    const p = (request as WithPending)[PENDING];
    if (p) {
      try {
        appendFileSync(file, `${JSON.stringify(line(++seq, request, reply, p))}\n`);
      } catch (err) {
        request.log.error({ err, file }, 'the recorder could not write its file');
      }
    }
    done();
  });

  function line(n: number, request: FastifyRequest, reply: FastifyReply, p: Pending): RecordedCall {
    // In the order a client revealed them: its credential, its body, then what the reply revealed.
    const headers = redactor.headers(request.headers);
    const path = redactor.url(request.url);
    const bodyPath = request.url.split('?')[0];
    const body = p.body === undefined ? null : redactor.json(JSON.parse(p.body), bodyPath);
    let value: unknown = null;
    let kind = p.reply.kind;
    if (kind === 'text' && p.reply.text !== undefined) {
      const text = p.reply.text;
      const type = String(reply.getHeader('content-type') ?? '');
      let parsed: unknown;
      let json = false;
      if (type.startsWith('application/json')) {
        try {
          parsed = JSON.parse(text);
          json = true;
        } catch {
          /* recorded as text */
        }
      }
      if (json) [value, kind] = [redactor.json(parsed, bodyPath), 'json'];
      else value = redactor.text(text);
    }
    const replyHeaders: Record<string, string> = {};
    for (const h of KEPT_REPLY_HEADERS) {
      const v = reply.getHeader(h);
      if (v !== undefined) replyHeaders[h] = redactor.text(String(v));
    }
    return {
      seq: n,
      at: clock.now(),
      method: request.method,
      path,
      control: request.url.startsWith('/_emu/') || request.url === '/_emu',
      status: reply.statusCode,
      request: { headers, body },
      reply: value,
      reply_kind: kind,
      reply_headers: replyHeaders,
      ms: Math.round(reply.elapsedTime * 10) / 10,
    };
  }
}

/** The body as parsed, as JSON text: bytes (an upload) are noted by their size, not kept. */
function bodyText(body: unknown): string {
  if (Buffer.isBuffer(body)) return JSON.stringify(`<binary body: ${body.length} bytes>`);
  try {
    return JSON.stringify(body) ?? JSON.stringify('<body not recorded>');
  } catch {
    return JSON.stringify('<body not recorded>');
  }
}

/** A reply as sent: a string, or bytes (offer search sends its JSON pre-serialized as bytes), or a stream. */
function replyOf(payload: unknown, type: string): Pending['reply'] {
  if (payload === undefined || payload === null || payload === '') return { kind: 'empty' };
  if (typeof payload === 'string') return { kind: 'text', text: payload };
  if (Buffer.isBuffer(payload)) {
    if (payload.length === 0) return { kind: 'empty' };
    return /^(application\/json|text\/)/.test(type) ? { kind: 'text', text: payload.toString('utf8') } : { kind: 'binary' };
  }
  return { kind: 'stream' };
}

/**
 * Appending to an earlier recording: its calls' numbers and its secrets' numbers go on from where it ended (a secret
 * seen before this start gets a new number: the recorder never keeps secrets, so it cannot know it again).
 */
function resume(file: string): { lastSeq: number; nextSecret: number } {
  if (!existsSync(file)) return { lastSeq: 0, nextSecret: 1 };
  const text = readFileSync(file, 'utf8');
  let lastSeq = 0;
  for (const m of text.matchAll(/"seq":(\d+)/g)) lastSeq = Math.max(lastSeq, Number(m[1]));
  let maxSecret = 0;
  for (const m of text.matchAll(PLACEHOLDER)) maxSecret = Math.max(maxSecret, Number(m[1]));
  return { lastSeq, nextSecret: maxSecret + 1 };
}
