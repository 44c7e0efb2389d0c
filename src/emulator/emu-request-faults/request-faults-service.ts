/**
 * Issue 34 item 3: faults by API operation. A rule names requests (a method, a route or a prefix of routes, a
 * permission category) and what happens to them: a status (429 with Retry-After, as Vast.ai rate-limits, or a 5xx),
 * added latency, or no answer at all. Whether a matched request is faulted is a pure function of the rule's seed (or
 * GPUPLANE_SEED with the rule id) and n, the rule's count of matched requests, both kept in the database: a run that
 * makes the same requests is faulted the same way, whichever process of a shared database serves them.
 */
import { createHash } from 'node:crypto';
import type { Static } from 'typebox';
import type { Clock } from '../../platform/clock.js';
import { ApiError, badRequest, notFound, type ErrorBody } from '../../platform/errors.js';
import { CATEGORIES } from '../../platform/permissions.js';
import type { Tx } from '../../platform/db/connect.js';
import { requestFaultsStore, type RequestFaultRow } from './request-faults-store.js';
import { DEFAULT_TIMEOUT_MS, type RequestFault, type RequestFaultBody } from './request-faults-schemas.js';

export type RequestFaultInput = Static<typeof RequestFaultBody>;
export type RequestFaultView = Static<typeof RequestFault>;

/** A route of the API as the app registered it: its method, its path in the API reference's form, its category. */
export interface KnownRoute {
  method: string;
  route: string;
  category: string | undefined;
}

/** What the hook must do to one request: wait, then answer with a fault, drop the connection, or go on. */
export interface FaultDecision {
  latencyMs: number;
  /** The faulted answer; undefined: the request goes on (after latencyMs). */
  answer?: { ruleId: number; status: number; headers: Record<string, string>; body: ErrorBody };
  /** Drop the connection without an answer (after latencyMs). */
  drop?: { ruleId: number };
}

/** A request as the rules see it: its method, its route (API reference form) if one matched, its path, its category. */
export interface FaultedRequest {
  method: string;
  route: string | undefined;
  path: string;
  category: string | undefined;
}

/** `/api/v0/instances/:id/` (Fastify) → `/api/v0/instances/{id}/` (the API reference, OpenAPI). */
export const referenceForm = (url: string) => url.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');
/** Every path is served with and without its trailing slash (contract §3): compare without it. */
const bare = (path: string) => (path.length > 1 ? path.replace(/\/+$/, '') : path);

/** The draw for the n-th request a rule matched: uniform in [0, 1), the same for the same inputs on any machine. */
export function draw(seed: number, ruleId: number | null, n: number): number {
  const h = createHash('sha256').update(`gpuplane-request-fault:${seed}:${ruleId ?? ''}:${n}`).digest();
  return h.readUIntBE(0, 6) / 2 ** 48;
}

const ERROR_OF: Record<number, [ApiError['code'], string]> = {
  429: ['rate_limited', 'too many requests; retry later'],
  500: ['internal_error', 'internal error'],
  502: ['bad_gateway', 'bad gateway'],
  503: ['service_unavailable', 'service unavailable; retry later'],
  // The error table has no code of its own for 504: a gateway timeout says the same as a 503 to a client.
  504: ['service_unavailable', 'gateway timeout; retry later'],
};

function matches(rule: RequestFaultRow, req: FaultedRequest): boolean {
  if (rule.method !== '*' && rule.method !== req.method) return false;
  if (rule.category !== null && rule.category !== req.category) return false;
  if (rule.route === null || rule.route === '*') return true;
  if (rule.route.endsWith('*')) {
    const prefix = rule.route.slice(0, -1);
    return (req.route !== undefined && req.route.startsWith(prefix)) || req.path.startsWith(prefix);
  }
  return req.route !== undefined && bare(req.route) === bare(rule.route);
}

function view(r: RequestFaultRow): RequestFaultView {
  return {
    id: r.id,
    method: r.method,
    route: r.route,
    category: r.category,
    probability: r.probability,
    status: r.status,
    retry_after: r.retry_after,
    latency_ms: r.latency_ms,
    timeout: r.timeout === 1,
    count: r.max_count,
    seed: r.seed,
    matched: r.matched,
    fired: r.fired,
    created_at: r.created_at,
  };
}

/**
 * How long the hook trusts the rules it last read before it reads them again, real milliseconds. Without it every
 * request of an emulator-mode server paid a query, most often of an empty table (on PostgreSQL a round trip each).
 * Stale rules cost nothing wrong: a rule counts and fires only by a conditional UPDATE of its row (store.match,
 * store.fire), so one deleted meanwhile (by /_emu/reset or another process) never fires; this process's own changes
 * clear the cache at once; a rule added by another process sharing the database acts at most this much later.
 */
export const RULES_CACHE_MS = 250;

export function requestFaultsServiceFactory(deps: {
  db: Tx;
  clock: Clock;
  seed: number;
  routes: () => readonly KnownRoute[];
  /** Monotonic real milliseconds, for the rules' cache only (not the service clock: a virtual one does not pass). */
  monotonicMs?: () => number;
}) {
  const store = requestFaultsStore(deps.db);
  const monotonicMs = deps.monotonicMs ?? (() => performance.now());
  let cached: { at: number; rules: Promise<RequestFaultRow[]> } | undefined;
  const rules = (): Promise<RequestFaultRow[]> => {
    const now = monotonicMs();
    if (!cached || now - cached.at >= RULES_CACHE_MS) {
      const read = store.list();
      cached = { at: now, rules: read };
      // A failed read is not kept: the next request reads again.
      read.catch(() => (cached = undefined));
    }
    return cached.rules;
  };
  // The categories a route may declare: the permission categories, and `public` (no key needed).
  const categories = new Set<string>([...CATEGORIES, 'public']);

  /** The rule's route as stored: `*`, a prefix, or a route of the API (400 naming the field otherwise). */
  function checkRoute(route: string, method: string): string {
    if (route === '*') return route;
    const r = referenceForm(route.trim());
    if (!r.startsWith('/')) throw badRequest(`route: must start with / (a route path as the API reference shows it) or be *`);
    if (r.endsWith('*')) {
      if (r.slice(0, -1).includes('*')) throw badRequest('route: * may only end a prefix');
      return r;
    }
    if (r.includes('*')) throw badRequest('route: * may only end a prefix');
    const known = deps.routes().filter((k) => bare(k.route) === bare(r));
    if (known.length === 0) throw badRequest(`route: ${r} is no route of the API (give it as the API reference shows it, e.g. /api/v0/instances/{id}/, or end a prefix with *)`);
    if (method !== '*' && !known.some((k) => k.method === method)) {
      throw badRequest(`method: ${r} has no ${method} (it has ${[...new Set(known.map((k) => k.method))].join(', ')})`);
    }
    return r;
  }

  return {
    async add(body: RequestFaultInput): Promise<{ success: true; fault: RequestFaultView }> {
      const method = body.method ?? '*';
      if (body.category !== undefined && !categories.has(body.category)) {
        throw badRequest(`category: unknown permission category ${JSON.stringify(body.category)} (one of ${[...categories].join(', ')})`);
      }
      const route = body.route === undefined ? null : checkRoute(body.route, method);
      if (route === null && body.category === undefined && method === '*') {
        throw badRequest('route: name a route, a category or a method to fault, or give route "*" to fault every request');
      }
      if (body.timeout && body.status !== undefined) throw badRequest('status: a timeout gives no answer; give status or timeout, not both');
      // No status: 429, unless the rule only adds latency or drops the connection.
      const latencyOnly = body.status === undefined && !body.timeout && body.latency_ms !== undefined;
      const status = body.timeout || latencyOnly ? null : (body.status ?? 429);
      if (body.retry_after !== undefined && status !== 429) throw badRequest('retry_after: only a 429 carries Retry-After');
      cached = undefined;
      const row = await store.insert({
        method,
        route,
        category: body.category ?? null,
        probability: body.probability ?? 1,
        status,
        retry_after: status === 429 ? (body.retry_after ?? 1) : null,
        latency_ms: body.latency_ms ?? (body.timeout ? DEFAULT_TIMEOUT_MS : 0),
        timeout: body.timeout ? 1 : 0,
        max_count: body.count ?? null,
        seed: body.seed ?? null,
        created_at: deps.clock.now(),
      });
      return { success: true, fault: view(row) };
    },

    async list(): Promise<{ faults: RequestFaultView[] }> {
      return { faults: (await store.list()).map(view) };
    },

    async remove(id: number): Promise<{ success: true; removed: number }> {
      cached = undefined;
      if (!(await store.delete(id))) throw notFound(`request fault ${id}`);
      return { success: true, removed: 1 };
    },

    async clear(): Promise<{ success: true; removed: number }> {
      cached = undefined;
      return { success: true, removed: await store.deleteAll() };
    },

    /**
     * What happens to a request: the rules that match it are tried oldest first; each counts the request (its n) and
     * draws; one that fires adds its latency, and one with a status or a timeout ends the search.
     */
    async decide(req: FaultedRequest): Promise<FaultDecision> {
      const decision: FaultDecision = { latencyMs: 0 };
      for (const rule of await rules()) {
        if (!matches(rule, req)) continue;
        const n = await store.match(rule.id);
        if (n === undefined) continue;
        const p = rule.seed === null ? draw(deps.seed, rule.id, n) : draw(rule.seed, null, n);
        if (rule.probability < 1 && p >= rule.probability) continue;
        if (!(await store.fire(rule.id))) continue;
        decision.latencyMs += rule.latency_ms;
        if (rule.timeout === 1) return { ...decision, drop: { ruleId: rule.id } };
        if (rule.status !== null) {
          const [code, msg] = ERROR_OF[rule.status] ?? ERROR_OF[500];
          const headers: Record<string, string> = rule.retry_after !== null ? { 'Retry-After': String(rule.retry_after) } : {};
          const err = new ApiError(code, msg, {}, rule.status, headers);
          return { ...decision, answer: { ruleId: rule.id, status: rule.status, headers, body: err.body() } };
        }
      }
      return decision;
    },
  };
}

export type RequestFaultsService = ReturnType<typeof requestFaultsServiceFactory>;
