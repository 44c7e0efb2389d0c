/**
 * The HTTP core of the SDK, over plain `fetch` so it runs in Node 20+ and in browsers alike (no Node-only imports in
 * src/sdk). It sends the key as Bearer, turns every error reply into a GpuplaneError, retries 429 after
 * `Retry-After` and a request that got no answer when repeating it is safe, and sends one `Idempotency-Key` per create
 * call, the same on each retry, so a retry never rents twice.
 */
import { backoffDelay } from './backoff.js';
import { GpuplaneError } from './errors.js';

export type FetchLike = (input: string, init?: RequestInit) => Promise<Response>;

export interface ClientOptions {
  /** Base URL of a gpuplane server, e.g. `http://127.0.0.1:8080`. */
  url: string;
  /** API key (or session key) sent as `Authorization: Bearer`. */
  apiKey?: string;
  /**
   * Headers sent with every request. The web console sends its CSRF header here (`x-gpuplane-csrf`; see
   * src/platform/auth.ts), as any browser client authenticating by the session cookie must.
   */
  headers?: Record<string, string>;
  /** A fetch implementation. @default globalThis.fetch */
  fetch?: FetchLike;
  /** How many times a 429 reply is retried before it is reported. @default 3 */
  maxRetries?: number;
  /** The longest `Retry-After` (seconds) the client waits out; a longer one is reported at once. @default 60 */
  maxRetryAfterSeconds?: number;
  /** How the client waits between retries (tests pass a fake). @default setTimeout */
  sleep?: (ms: number) => Promise<void>;
  /** Where in its window each retry falls, from [0, 1) (tests pass a fixed one). @default Math.random */
  random?: () => number;
}

export type QueryValue = string | number | boolean | null | undefined | object;

export interface RequestOptions {
  query?: Record<string, QueryValue>;
  body?: unknown;
  /** Sends an `Idempotency-Key` (generated once for this call, reused on each retry). */
  idempotent?: boolean;
  /** Overrides the generated `Idempotency-Key`. */
  idempotencyKey?: string;
  signal?: AbortSignal;
  /** Whether a 200 reply with `success: false` is an error. @default true */
  checkSuccess?: boolean;
}

/** Wait before retry when the server sends 429 without a usable `Retry-After`. */
const DEFAULT_RETRY_AFTER_S = 1;
const DEFAULT_MAX_RETRIES = 3;
const DEFAULT_MAX_RETRY_AFTER_S = 60;
/**
 * A 429 is retried after its `Retry-After` plus up to this share of it more, drawn at random: clients that a server
 * turned away together (a window of its rate limit, a restart) do not all come back in the same instant (backoff.ts).
 */
const RETRY_AFTER_SPREAD = 0.5;
/**
 * A request that got no answer at all (the connection refused or reset before a reply: a browser's "Failed to
 * fetch", Node's ECONNRESET) is tried again this many times when sending it twice cannot do anything twice: a GET or
 * HEAD, or a call with an `Idempotency-Key` (the server answers a repeat with the first answer). A server that stays
 * unreachable is reported after about NETWORK_RETRY.firstMs * 3 ms.
 */
const NETWORK_RETRIES = 2;
const NETWORK_RETRY = { firstMs: 250, maxMs: 1000 };

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** `Retry-After` is either delta-seconds or an HTTP date (RFC 9110 §10.2.3). */
export function retryAfterSeconds(header: string | null, nowMs: number): number {
  if (header === null || header.trim() === '') return DEFAULT_RETRY_AFTER_S;
  const v = header.trim();
  if (/^\d+(\.\d+)?$/.test(v)) return Number(v);
  const at = Date.parse(v);
  return Number.isNaN(at) ? DEFAULT_RETRY_AFTER_S : Math.max(0, (at - nowMs) / 1000);
}

export function buildUrl(base: string, path: string, query?: Record<string, QueryValue>): string {
  const url = new URL(base.replace(/\/+$/, '') + path);
  for (const [k, v] of Object.entries(query ?? {})) {
    if (v === undefined) continue;
    // Filters (select_filters, order_by …) travel as URL-encoded JSON, as the API expects.
    url.searchParams.set(k, typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v));
  }
  return url.toString();
}

function errorFrom(status: number, body: unknown, text: string): GpuplaneError {
  if (body && typeof body === 'object' && !Array.isArray(body)) {
    const b = body as Record<string, unknown>;
    const msg = typeof b.msg === 'string' ? b.msg : typeof b.message === 'string' ? b.message : undefined;
    if (msg !== undefined || typeof b.error === 'string') {
      return new GpuplaneError(status, typeof b.error === 'string' ? b.error : `http_${status}`, msg ?? String(b.error), b);
    }
  }
  return new GpuplaneError(status, `http_${status}`, `HTTP ${status}${text ? `: ${text.slice(0, 200)}` : ''}`);
}

export interface Transport {
  readonly url: string;
  readonly apiKey: string | undefined;
  request<T>(method: string, path: string, options?: RequestOptions): Promise<T>;
  /** GETs an absolute URL (e.g. a log's `result_url`) as text, with the key. */
  getText(url: string): Promise<string>;
  /** A raw streaming GET (server-sent events): the response, or a GpuplaneError for an error reply. */
  stream(path: string, signal: AbortSignal): Promise<Response>;
}

export function createTransport(options: ClientOptions): Transport {
  const fetchFn: FetchLike = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const sleep = options.sleep ?? defaultSleep;
  const random = options.random ?? Math.random;
  const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
  const maxWait = options.maxRetryAfterSeconds ?? DEFAULT_MAX_RETRY_AFTER_S;
  const base = options.url;

  function headers(extra: Record<string, string>): Record<string, string> {
    const h: Record<string, string> = { accept: 'application/json', ...options.headers, ...extra };
    if (options.apiKey) h.authorization = `Bearer ${options.apiKey}`;
    return h;
  }

  async function send(url: string, init: RequestInit): Promise<Response> {
    try {
      return await fetchFn(url, init);
    } catch (err) {
      if (init.signal?.aborted) throw new GpuplaneError(0, 'aborted', 'the request was aborted');
      const cause = err instanceof Error ? ((err.cause as Error | undefined)?.message ?? err.message) : String(err);
      throw new GpuplaneError(0, 'network_error', `cannot reach ${base}: ${cause}`);
    }
  }

  return {
    url: base,
    apiKey: options.apiKey,

    async request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
      const url = buildUrl(base, path, opts.query);
      const extra: Record<string, string> = {};
      let payload: string | undefined;
      if (opts.body !== undefined) {
        payload = JSON.stringify(opts.body);
        extra['content-type'] = 'application/json';
      }
      // One key for the whole call: every retry below presents the same one.
      if (opts.idempotent || opts.idempotencyKey) extra['idempotency-key'] = opts.idempotencyKey ?? globalThis.crypto.randomUUID();
      const repeatable = method === 'GET' || method === 'HEAD' || extra['idempotency-key'] !== undefined;
      let networkFailures = 0;
      for (let attempt = 0; ; ) {
        let res: Response;
        try {
          res = await send(url, { method, headers: headers(extra), body: payload, signal: opts.signal });
        } catch (err) {
          if (!(err instanceof GpuplaneError && err.error === 'network_error') || !repeatable || networkFailures >= NETWORK_RETRIES) throw err;
          await sleep(backoffDelay(networkFailures++, NETWORK_RETRY, random));
          continue;
        }
        const text = await res.text();
        let body: unknown = text;
        if (text !== '') {
          try {
            body = JSON.parse(text);
          } catch {
            /* not JSON: keep the text */
          }
        }
        if (res.status === 429 && attempt < maxRetries) {
          const wait = retryAfterSeconds(res.headers.get('retry-after'), Date.now());
          if (wait <= maxWait) {
            await sleep(wait * 1000 * (1 + random() * RETRY_AFTER_SPREAD));
            attempt++;
            continue;
          }
        }
        if (!res.ok) throw errorFrom(res.status, body, text);
        if (opts.checkSuccess !== false && body && typeof body === 'object' && (body as { success?: unknown }).success === false) {
          throw errorFrom(res.status, body, text);
        }
        return body as T;
      }
    },

    async getText(url: string): Promise<string> {
      const res = await send(url, { method: 'GET', headers: headers({ accept: 'text/plain, application/json' }) });
      const text = await res.text();
      if (!res.ok) {
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          /* keep text */
        }
        throw errorFrom(res.status, body, text);
      }
      return text;
    },

    async stream(path: string, signal: AbortSignal): Promise<Response> {
      const res = await send(buildUrl(base, path), { method: 'GET', headers: headers({ accept: 'text/event-stream' }), signal });
      if (!res.ok) {
        const text = await res.text();
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          /* keep text */
        }
        throw errorFrom(res.status, body, text);
      }
      return res;
    },
  };
}
