/**
 * Scheduled jobs (docs/spec/client-compat-more.md §d): a stored API request that the server replays as its owner at
 * each occurrence of a timetable, on the service clock (so a virtual clock runs them too).
 *
 * Exactly once per occurrence: each pending occurrence is one scheduler row (ref `scheduled_job:<id>`). The scheduler
 * claims a due row in a transaction (on PostgreSQL with `FOR UPDATE SKIP LOCKED`) and deletes it in the same
 * transaction, so with any number of processes one of them claims it; the handler counts the run and schedules the
 * next occurrence in that transaction. The request itself is replayed after the commit (`ctx.afterCommit`: on SQLite a
 * request inside the transaction would wait for it forever). A process that stops between the commit and the replay
 * loses that occurrence (at most once, never twice); the job's `last_run_status` then stays null.
 *
 * Who the replay acts as. The job never stores a secret. It stores a grant: its user, team context and the id of the
 * API key that made (or last changed) it. At each occurrence a key of kind `job` is made for that one request, with
 * the creating key's permission document (a team key is bounded again by the member's current role, as every team
 * key is), and revoked as soon as the reply is in. This is what clouds do for scheduled work: Cloud Scheduler mints an
 * OIDC token per call from a service account, EventBridge Scheduler assumes a role per invocation; neither keeps the
 * user's own credential. While the creating key is revoked (a leaked key revoked, a `reset api-key`) the job sends
 * nothing and records why: a stolen key's schedules die with it. Updating the job binds it to the key of the update.
 */
import { scopeOf, type Principal, type Scope } from '../platform/auth.js';
import type { Clock } from '../platform/clock.js';
import type { Store, Tx } from '../platform/db/connect.js';
import { ApiError, badRequest, notFound } from '../platform/errors.js';
import type { PermissionDoc } from '../platform/permissions.js';
import type { JobContext, Scheduler } from '../platform/scheduler.js';
import type { KeysService } from '../keys/keys-service.js';
import type { KeysContract } from '../keys/keys-contract.js';
import {
  DEFAULT_WINDOW_S, REQUEST_BODY_MAX_CHARS, SCHEDULED_JOBS_MAX, type ScheduledJob, type ScheduledJobBody, type ScheduledJobUpdateBody,
} from './scheduled-jobs-schemas.js';
import type { ScheduledJobRow, ScheduledJobsStore } from './scheduled-jobs-store.js';
import { occurrenceAfter, occurrenceFrom, timetableError, type Frequency, type Timetable } from './scheduled-jobs-times.js';

/** The scheduler's job kind of an occurrence, and the ref of a job's pending occurrence. */
export const RUN_JOB = 'scheduled_job.run';
export const refOf = (id: number) => `scheduled_job:${id}`;
/** How much of a reply's `msg` is kept as the run's outcome. */
export const RUN_MSG_MAX_CHARS = 300;
/** Jobs run on the hour. */
const MINUTE_OF_THE_HOUR = 0;
/** The job routes themselves are not replayed (a job that makes jobs). */
const NOT_REPLAYED = '/api/v0/commands/schedule_job';

/** A request replayed through the app (app.ts wires `app.inject`), with a Bearer key. */
export type ReplayTransport = (req: { method: string; url: string; body: unknown; bearer: string }) => Promise<{ status: number; body: string }>;

export interface ScheduledJobsDeps {
  store: Store;
  jobs: ScheduledJobsStore;
  clock: Clock;
  scheduler: Scheduler;
  keys: Pick<KeysContract, 'findById' | 'revoke'>;
  keysService: Pick<KeysService, 'create'>;
  /**
   * The instances feature: whether `id` is a live instance of `scope`, its row locked until `tx` ends on PostgreSQL,
   * so a destroy running at the same time either came first (404 here) or waits and then removes the new job.
   */
  lockInstance(scope: Scope, id: number, tx: Tx): Promise<boolean>;
}

const ownerOf = (scope: Scope) => (scope.teamId !== null ? `team:${scope.teamId}` : `user:${scope.userId}`);
const dedupeKey = (owner: string, j: { request_method: string; api_endpoint: string; instance_id: number | null }) =>
  `${owner}|${j.request_method}|${j.api_endpoint}|${j.instance_id ?? ''}`;
const timetableOf = (j: Pick<ScheduledJobRow, 'start_time' | 'end_time' | 'frequency' | 'day_of_the_week' | 'hour_of_the_day'>): Timetable => ({
  start_time: j.start_time, end_time: j.end_time, frequency: j.frequency as Frequency, day_of_the_week: j.day_of_the_week, hour_of_the_day: j.hour_of_the_day,
});
const utc = (t: number) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');

export function toScheduledJob(r: ScheduledJobRow): ScheduledJob {
  return {
    id: r.id,
    user_id: r.user_id,
    instance_id: r.instance_id,
    api_endpoint: r.api_endpoint,
    request_method: r.request_method,
    request_body: JSON.parse(r.request_body) as Record<string, unknown>,
    start_time: r.start_time,
    end_time: r.end_time,
    day_of_the_week: r.day_of_the_week,
    hour_of_the_day: r.hour_of_the_day,
    min_of_the_hour: r.min_of_the_hour,
    frequency: r.frequency,
    next_run_at: r.next_run_at,
    run_count: r.run_count,
    last_run_at: r.last_run_at,
    last_run_status: r.last_run_status,
    last_run_msg: r.last_run_msg,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

/** The job's request and timetable after the schema: the rules the schema cannot state. Returns the first occurrence. */
function checkJob(j: Required<ScheduledJobBody>, now: number): number {
  const endpoint = j.api_endpoint;
  if (endpoint.split('/').includes('..') || endpoint.includes('//')) throw badRequest('body.api_endpoint must be a plain API path');
  if (endpoint.startsWith(NOT_REPLAYED)) throw badRequest('body.api_endpoint: a scheduled job cannot replay the scheduled-job routes');
  if (JSON.stringify(j.request_body).length > REQUEST_BODY_MAX_CHARS) throw badRequest(`body.request_body is longer than ${REQUEST_BODY_MAX_CHARS} characters as JSON`);
  const wrong = timetableError(j);
  if (wrong) throw badRequest(`body: ${wrong}`);
  if (!(j.start_time < j.end_time)) throw badRequest('body.start_time must be before body.end_time');
  const first = occurrenceFrom(timetableOf(j), now);
  if (first === null) throw badRequest(`body: no ${j.frequency} occurrence is left before end_time (${utc(j.end_time)})`);
  return first;
}

function withDefaults(b: ScheduledJobBody, now: number): Required<ScheduledJobBody> {
  const start = b.start_time ?? now;
  return {
    ...b, start_time: start, end_time: b.end_time ?? start + DEFAULT_WINDOW_S,
    day_of_the_week: b.day_of_the_week ?? null, hour_of_the_day: b.hour_of_the_day ?? null, instance_id: b.instance_id ?? null,
  };
}

function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === '23505';
}

export function scheduledJobsServiceFactory(deps: ScheduledJobsDeps) {
  const { store, jobs, clock, scheduler, keys, keysService } = deps;
  const db = store.db;
  const postgres = store.dialect === 'postgres';
  let transport: ReplayTransport | undefined;

  const schedule = (id: number, at: number, tx: Tx) => scheduler.schedule(RUN_JOB, at, { id }, { tx, ref: refOf(id) });
  // A pending occurrence that is running now (its row locked by a scheduler) is left to find its job gone or changed.
  const unschedule = (id: number, tx: Tx) => scheduler.cancel(refOf(id), { tx, kind: RUN_JOB, skipRunning: true });

  async function checkInstance(scope: Scope, id: number | null, tx: Tx): Promise<void> {
    if (id !== null && !(await deps.lockInstance(scope, id, tx))) throw notFound(`instance ${id}`);
  }

  /** One occurrence, inside the scheduler's transaction: counted, the next one scheduled, the request sent after. */
  async function run(payload: { id: number }, ctx: JobContext): Promise<void> {
    const job = await jobs.lock(payload.id, postgres, ctx.tx);
    // Deleted, or its timetable changed since this occurrence was scheduled (the change scheduled its own).
    if (!job || job.next_run_at !== ctx.dueAt) return;
    const next = occurrenceAfter(timetableOf(job), ctx.dueAt, ctx.now);
    await jobs.claimRun(job.id, ctx.dueAt, next, ctx.now, ctx.tx);
    if (next !== null) await schedule(job.id, next, ctx.tx);
    ctx.afterCommit(() => replay(job, ctx.dueAt));
  }

  /** Sends the job's request as its user, with a key made for this request only, and records the outcome. */
  async function replay(job: ScheduledJobRow, dueAt: number): Promise<void> {
    const record = (status: number | null, msg: string) => jobs.recordOutcome(job.id, dueAt, status, msg.slice(0, RUN_MSG_MAX_CHARS));
    const grant = await keys.findById(job.key_id);
    if (!grant || grant.revoked_at !== null) {
      return record(null, `not sent: API key ${job.key_id}, which scheduled this job, was revoked; update the job with a live key`);
    }
    if (!transport) return record(null, 'not sent: the server is not serving requests');
    const permissions = grant.permissions ? (JSON.parse(grant.permissions) as PermissionDoc) : null;
    const { key, secret } = await keysService.create({ user_id: job.user_id, team_id: job.team_id, kind: 'job', name: `scheduled job ${job.id}`, permissions });
    try {
      const res = await transport({ method: job.request_method, url: job.api_endpoint, body: JSON.parse(job.request_body), bearer: secret });
      await record(res.status, replyMsg(res));
    } catch (err) {
      await record(null, 'not completed: the request failed inside the server');
      throw err;
    } finally {
      await keys.revoke(key.id, clock.now());
    }
  }

  scheduler.register(RUN_JOB, run);

  return {
    /** app.ts: how replays reach the routes (Fastify's inject), set once the app is built. */
    useTransport(t: ReplayTransport): void {
      transport = t;
    },

    async list(p: Principal): Promise<ScheduledJob[]> {
      return (await jobs.list(ownerOf(scopeOf(p)))).map(toScheduledJob);
    },

    /** A second job for the same request and instance is the spec's 422, naming the job to update. */
    async create(p: Principal, body: ScheduledJobBody) {
      const scope = scopeOf(p);
      const owner = ownerOf(scope);
      const now = clock.now();
      const j = withDefaults(body, now);
      const first = checkJob(j, now);
      const row = await db.transaction().execute(async (tx) => {
        await checkInstance(scope, j.instance_id, tx);
        const key = dedupeKey(owner, j);
        const exists = (found: ScheduledJobRow) =>
          new ApiError('scheduled_job_exists', `scheduled job ${found.id} already replays ${j.request_method} ${j.api_endpoint}${j.instance_id === null ? '' : ` for instance ${j.instance_id}`}: change that job instead`, { scheduled_job_id: found.id });
        const existing = await jobs.findByDedupe(key, tx);
        if (existing) throw exists(existing);
        if ((await jobs.count(owner, tx)) >= SCHEDULED_JOBS_MAX) throw badRequest(`an account can hold at most ${SCHEDULED_JOBS_MAX} scheduled jobs; delete one first`);
        const inserted = await jobs.insert({
          owner, user_id: scope.userId, team_id: scope.teamId, key_id: p.key.id, instance_id: j.instance_id, api_endpoint: j.api_endpoint,
          request_method: j.request_method, request_body: JSON.stringify(j.request_body), start_time: j.start_time, end_time: j.end_time,
          frequency: j.frequency, day_of_the_week: j.day_of_the_week, hour_of_the_day: j.hour_of_the_day, min_of_the_hour: MINUTE_OF_THE_HOUR,
          dedupe_key: key, next_run_at: first, run_count: 0, last_run_at: null, last_run_status: null, last_run_msg: null, created_at: now, updated_at: now,
        }, tx);
        if (!inserted) {
          // Another request made the same job after the check above; the unique index decided.
          const winner = await jobs.findByDedupe(key, tx);
          throw winner ? exists(winner) : new ApiError('conflict', 'the same scheduled job is being made by another request; list your jobs');
        }
        await schedule(inserted.id, first, tx);
        return inserted;
      });
      return {
        success: true as const,
        msg: `scheduled job ${row.id}: ${row.frequency} ${row.request_method} ${row.api_endpoint}, next at ${utc(first)}`,
        scheduled_job_id: row.id,
        scheduled_job: toScheduledJob(row),
      };
    },

    /** Changes the given fields, binds the job to the caller's key, and schedules its next occurrence from now. */
    async update(p: Principal, id: number, body: ScheduledJobUpdateBody) {
      const scope = scopeOf(p);
      const owner = ownerOf(scope);
      const row = await db.transaction().execute(async (tx) => {
        const cur = await jobs.lockOwned(id, owner, postgres, tx);
        if (!cur) throw notFound(`scheduled job ${id}`);
        const given = <T>(v: T | undefined, old: T) => (v === undefined ? old : v);
        const j: Required<ScheduledJobBody> = {
          start_time: given(body.start_time, cur.start_time),
          end_time: given(body.end_time, cur.end_time),
          api_endpoint: given(body.api_endpoint, cur.api_endpoint),
          request_method: given(body.request_method, cur.request_method as ScheduledJobBody['request_method']),
          request_body: given(body.request_body, JSON.parse(cur.request_body) as Record<string, unknown>),
          frequency: given(body.frequency, cur.frequency as Frequency),
          day_of_the_week: given(body.day_of_the_week, cur.day_of_the_week),
          hour_of_the_day: given(body.hour_of_the_day, cur.hour_of_the_day),
          instance_id: given(body.instance_id, cur.instance_id),
        };
        const now = clock.now();
        const first = checkJob(j, now);
        if (j.instance_id !== cur.instance_id) await checkInstance(scope, j.instance_id, tx);
        const key = dedupeKey(owner, j);
        const clash = key !== cur.dedupe_key ? await jobs.findByDedupe(key, tx) : undefined;
        if (clash) throw new ApiError('conflict', `scheduled job ${clash.id} already replays ${j.request_method} ${j.api_endpoint}; change or delete that one`);
        const set = {
          user_id: scope.userId, team_id: scope.teamId, key_id: p.key.id, instance_id: j.instance_id, api_endpoint: j.api_endpoint,
          request_method: j.request_method, request_body: JSON.stringify(j.request_body), start_time: j.start_time, end_time: j.end_time,
          frequency: j.frequency, day_of_the_week: j.day_of_the_week, hour_of_the_day: j.hour_of_the_day, dedupe_key: key, next_run_at: first, updated_at: now,
        };
        await jobs.update(id, set, tx).catch((err: unknown) => {
          throw isUniqueViolation(err) ? new ApiError('conflict', `another scheduled job already replays ${j.request_method} ${j.api_endpoint}`) : err;
        });
        await unschedule(id, tx);
        await schedule(id, first, tx);
        return { ...cur, ...set };
      });
      return { success: true as const, msg: `scheduled job ${id} updated; next at ${utc(row.next_run_at!)}`, scheduled_job: toScheduledJob(row) };
    },

    async remove(p: Principal, id: number) {
      const owner = ownerOf(scopeOf(p));
      await db.transaction().execute(async (tx) => {
        if (!(await jobs.lockOwned(id, owner, postgres, tx))) throw notFound(`scheduled job ${id}`);
        await jobs.remove(id, tx);
        await unschedule(id, tx);
      });
      return { success: true as const, msg: `scheduled job ${id} deleted` };
    },

    /** Instances hook: an instance destroyed takes its jobs with it, in the destroy's transaction. */
    async instanceDestroyed(tx: Tx, instanceId: number): Promise<void> {
      for (const id of await jobs.removeForInstance(instanceId, tx)) await unschedule(id, tx);
    },
  };
}

/** The reply's `msg`, else `ok` for a success or the status for a failure without one. */
function replyMsg(res: { status: number; body: string }): string {
  try {
    const parsed = JSON.parse(res.body) as unknown;
    if (parsed && typeof parsed === 'object' && typeof (parsed as { msg?: unknown }).msg === 'string') return (parsed as { msg: string }).msg;
  } catch {
    /* not JSON */
  }
  return res.status < 400 ? 'ok' : `failed with status ${res.status}`;
}

export type ScheduledJobsService = ReturnType<typeof scheduledJobsServiceFactory>;
