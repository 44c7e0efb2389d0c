import { sql, type Compilable, type Transaction } from 'kysely';
import type { Logger } from 'pino';
import { isVirtual, type Clock, type VirtualClock } from './clock.js';
import type { Database } from './db/schema.js';
import type { Db, Store, Tx } from './db/connect.js';
import { prepared } from './db/prepared.js';
import { coalescing } from './coalesce.js';

export interface JobContext {
  tx: Transaction<Database>;
  /** When the job was due; with a virtual clock the clock stands at this time while the job runs. */
  dueAt: number;
  now: number;
  /**
   * Adds work to run once this job's transaction has committed: work that needs connections of its own (on SQLite a
   * query outside `tx` waits for the transaction, so it cannot run inside it), such as a request replayed through the
   * app. The scheduler awaits it before it takes the next job, so with a virtual clock it runs at the job's due time.
   * It runs at most once: not when the job rolls back, and not if the process stops between the commit and it.
   * A failure is logged, never retried (the job has committed).
   */
  afterCommit(work: () => Promise<void>): void;
}

export type JobHandler = (payload: any, ctx: JobContext) => Promise<void>;

/** How long a job that threw waits before it is tried again. */
export const JOB_RETRY_DELAY_S = 5;
/** Due jobs one read counts at most: the claims that follow it before the next read. */
const DUE_READ_LIMIT = 16;
const VIRTUAL_CLOCK_KEY = 'virtual_clock_now';

/** No `kind` job is due in (`after`, `due`]: the condition under which an `ensure` of the kind inserts one. */
const noneDueBetween = (kind: string, after: unknown, due: unknown) =>
  sql<boolean>`NOT EXISTS (SELECT 1 FROM jobs WHERE kind = ${kind} AND due_at > ${after} AND due_at <= ${due})`;

/**
 * Runs due work: simulated hosts' agents, billing, expiries. Jobs are rows; running one and deleting it happen in one
 * transaction, and on PostgreSQL the row is claimed with `FOR UPDATE SKIP LOCKED`, so with any number of processes
 * each due job runs once. SQLite is a single-process store; its writes are serialized.
 */
export class Scheduler {
  private readonly handlers = new Map<string, JobHandler>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;
  /** Called after each job commits (e.g. to push instance events to listeners). */
  readonly afterJob: Array<(kind: string, payload: any) => void> = [];
  // Scheduling and cancelling run on every rent, start and stop (platform/db/prepared.ts).
  private readonly insertJob = prepared(['kind', 'due_at', 'payload', 'ref'], (j: { kind: string; due_at: number; payload: string; ref: string | null }) =>
    this.store.db.insertInto('jobs').values(j),
  );
  private readonly deleteByRef = prepared(['ref'], (q: { ref: string }) => this.store.db.deleteFrom('jobs').where('ref', '=', q.ref));
  private readonly deleteByRefKind = prepared(['ref', 'kind'], (q: { ref: string; kind: string }) =>
    this.store.db.deleteFrom('jobs').where('ref', '=', q.ref).where('kind', '=', q.kind),
  );

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  register(kind: string, handler: JobHandler): void {
    if (this.handlers.has(kind)) throw new Error(`job kind ${kind} registered twice`);
    this.handlers.set(kind, handler);
  }

  /**
   * Adds a job. `ref` names what it is about (e.g. `instance:12`) so that it can be cancelled with `cancel(ref)`.
   */
  async schedule(kind: string, dueAt: number, payload: unknown, opts: { tx?: Tx; ref?: string } = {}): Promise<void> {
    await this.insertJob(opts.tx ?? this.store.db, { kind, due_at: dueAt, payload: JSON.stringify(payload), ref: opts.ref ?? null });
  }

  // A job that serves everything due (the simulated agents' step) is scheduled unless one is pending: one statement,
  // not a read and a write (every rent and destroy on an emulated machine asks).
  private readonly insertUnlessPending = prepared(['kind', 'due_at', 'after'], (q: { kind: string; due_at: number; after: number }) =>
    this.store.db.insertInto('jobs').columns(['kind', 'due_at', 'payload', 'ref']).expression(
      this.store.db.selectNoFrom([
        sql<string>`cast(${q.kind} as text)`.as('kind'),
        sql<number>`cast(${q.due_at} as double precision)`.as('due_at'),
        sql<string>`'{}'`.as('payload'),
        sql<null>`null`.as('ref'),
      ]).where((w) => w.not(w.exists(
        w.selectFrom('jobs').select('jobs.id').where('jobs.kind', '=', q.kind).where('jobs.due_at', '>', q.after).where('jobs.due_at', '<=', q.due_at),
      ))),
    ),
  );

  /**
   * Makes sure a `kind` job (payload `{}`, no ref) runs at `dueAt` or earlier: schedules one unless a job of the kind
   * is due in (`after`, `dueAt`] already. One statement. Jobs due by `after` are not counted on (one may be running,
   * and past the point where it would see the caller's work).
   */
  async ensure(kind: string, dueAt: number, opts: { tx?: Tx; after?: number } = {}): Promise<void> {
    await this.insertUnlessPending(opts.tx ?? this.store.db, { kind, due_at: dueAt, after: opts.after ?? -Infinity });
  }

  /**
   * A statement of the caller's that writes rows and returns them (`work`: the work a job will do), and `ensure` of
   * the job when it wrote any: one statement on PostgreSQL (a data-modifying CTE), where SQLite, which has none, runs
   * the two in turn. Built once (platform/db/prepared.ts): `keys` name `work`'s values, whose shape must not depend on
   * them. Returns the statement: `(tx, values, {dueAt, after})`.
   */
  ensureAfter<P extends object>(kind: string, keys: (keyof P & string)[], work: (values: P) => Compilable<unknown>) {
    type Job = { $job_due: number; $job_after: number };
    if (this.store.dialect !== 'postgres') {
      const write = prepared(keys, work);
      return async (tx: Tx, values: P, job: { dueAt: number; after: number }): Promise<void> => {
        if ((await write(tx, values)).rows.length) await this.ensure(kind, job.dueAt, { tx, after: job.after });
      };
    }
    const both = prepared<P & Job, unknown>([...keys, '$job_due', '$job_after'], (v) => ({
      compile: () => sql`
        WITH work AS (${work(v)})
        INSERT INTO jobs (kind, due_at, payload, ref)
        SELECT cast(${kind} as text), cast(${v.$job_due} as double precision), '{}', NULL
        WHERE EXISTS (SELECT 1 FROM work)
          AND ${noneDueBetween(kind, v.$job_after, v.$job_due)}`.compile(this.store.db),
    }));
    return async (tx: Tx, values: P, job: { dueAt: number; after: number }): Promise<void> => {
      await both(tx, { ...values, $job_due: job.dueAt, $job_after: job.after });
    };
  }

  /**
   * Makes sure a `kind` job (payload `{}`, no ref) runs at the time `first` gives (a one-row, one-column `t` read:
   * when the caller's earliest work is due), unless it gives null or such a job is due in (`after`, that time]
   * already: one statement, where a read of the time and `ensure` were two. Built once (platform/db/prepared.ts).
   * Returns `(tx, {after})`.
   */
  ensureAtFirst(kind: string, first: Compilable<{ t: number | null }>) {
    const run = prepared(['after'], (q: { after: number }) => ({
      compile: () => sql`
        INSERT INTO jobs (kind, due_at, payload, ref)
        SELECT cast(${kind} as text), f.t, '{}', NULL FROM (${first}) f
        WHERE f.t IS NOT NULL
          AND ${noneDueBetween(kind, q.after, sql`f.t`)}`.compile(this.store.db),
    }));
    return async (tx: Tx, opts: { after: number }): Promise<void> => void (await run(tx, opts));
  }

  private readonly firstDueAfter = prepared(['kind', 'after'], (q: { kind: string; after: number }) =>
    this.store.db.selectFrom('jobs').select((eb) => eb.fn.min('due_at').as('due')).where('kind', '=', q.kind).where('due_at', '>', q.after),
  );

  /** The earliest due time of a `kind` job due after `after`, or null when there is none. */
  async nextDue(kind: string, after: number, tx: Tx = this.store.db): Promise<number | null> {
    const due = (await this.firstDueAfter(tx, { kind, after })).rows[0]?.due;
    return due === null || due === undefined ? null : Number(due);
  }

  /**
   * Removes every scheduled job about `ref` (of one kind, when given). `skipRunning` (with a kind) leaves a job that
   * is running now, on PostgreSQL, instead of waiting for it to commit.
   */
  async cancel(ref: string, opts: { tx?: Tx; kind?: string; skipRunning?: boolean } = {}): Promise<void> {
    const tx = opts.tx ?? this.store.db;
    if (opts.kind && opts.skipRunning && this.store.dialect === 'postgres') {
      // A job being run holds its row's lock until it commits: skip it rather than wait for it.
      const pending = tx.selectFrom('jobs').select('id').where('ref', '=', ref).where('kind', '=', opts.kind).forUpdate().skipLocked();
      await tx.deleteFrom('jobs').where('id', 'in', pending).execute();
    } else if (opts.kind) await this.deleteByRefKind(tx, { ref, kind: opts.kind });
    else await this.deleteByRef(tx, { ref });
  }

  // PostgreSQL: the pending jobs go and the new one comes in one statement (a data-modifying CTE; its delete does not
  // see the row the insert adds). Every rent, stop and destroy re-times its user's credit check this way.
  private readonly replaceJob = prepared(['kind', 'due_at', 'payload', 'ref'], (j: { kind: string; due_at: number; payload: string; ref: string }) =>
    this.store.db
      .with('gone', (db) => db.deleteFrom('jobs').where('id', 'in', db.selectFrom('jobs').select('id').where('ref', '=', j.ref).where('kind', '=', j.kind).forUpdate().skipLocked()))
      .insertInto('jobs').values(j),
  );

  /**
   * `cancel(ref, {kind, skipRunning: true})`, then, unless `dueAt` is null, `schedule(kind, dueAt, payload, {ref})`:
   * one statement on PostgreSQL.
   */
  async reschedule(kind: string, ref: string, dueAt: number | null, payload: unknown, opts: { tx?: Tx } = {}): Promise<void> {
    const tx = opts.tx ?? this.store.db;
    if (dueAt === null || this.store.dialect !== 'postgres') {
      await this.cancel(ref, { tx, kind, skipRunning: true });
      if (dueAt !== null) await this.schedule(kind, dueAt, payload, { tx, ref });
      return;
    }
    await this.replaceJob(tx, { kind, due_at: dueAt, payload: JSON.stringify(payload), ref });
  }

  /**
   * Runs every job due at or before `until`, in time order. With a virtual clock the clock steps to each job's due
   * time before it runs, so work sees the time it was due at.
   */
  runDue(until: number = this.clock.now()): Promise<number> {
    // One pass at a time per process; a second caller waits for the pass in flight and then runs its own.
    const prev = this.running ?? Promise.resolve(0);
    const next = prev.catch(() => 0).then(() => this.drain(until));
    this.running = next;
    return next;
  }

  private async drain(until: number): Promise<number> {
    let ran = 0;
    // Claims as many jobs as a read found due, then reads again: most polls find nothing due, and one read says so
    // where an empty claim took a transaction (three statements). A claim that finds nothing (the jobs seen are
    // running in other processes) ends the pass, as before.
    for (let due = await this.dueCount(until); due > 0; due = await this.dueCount(until)) {
      for (let i = 0; i < due; i++) {
        const done = await this.runOne(until);
        if (done === 'none') return ran;
        if (done === 'ran') ran++;
      }
    }
    return ran;
  }

  private readonly dueIds = prepared(['until'], (q: { until: number }) =>
    this.store.db.selectFrom('jobs').select('id').where('due_at', '<=', q.until).limit(DUE_READ_LIMIT),
  );

  /** How many jobs are due by `until` (DUE_READ_LIMIT at most), running ones included. */
  private async dueCount(until: number): Promise<number> {
    return (await this.dueIds(this.jobsDb, { until })).rows.length;
  }

  /**
   * Claims the first job due by `until` by deleting it, in one statement: its transaction holds the row's lock until
   * it commits (other processes skip it), and a handler that fails rolls the delete back, so the job is there to be
   * retried. (A claim, then a delete after the handler, took a round trip more per job on PostgreSQL.)
   */
  private readonly claimNext = prepared(['until'], (q: { until: number }) => {
    let next = this.store.db.selectFrom('jobs').select('id').where('due_at', '<=', q.until).orderBy('due_at').orderBy('id').limit(1);
    if (this.store.dialect === 'postgres') next = next.forUpdate().skipLocked();
    return this.store.db.deleteFrom('jobs').where('id', '=', next).returning(['id', 'kind', 'payload', 'due_at']);
  });

  /** Where jobs are claimed and run: PostgreSQL's background pool (connect.ts), else the store's connection. */
  private get jobsDb(): Db {
    return this.store.background ?? this.store.db;
  }

  private async runOne(until: number): Promise<'ran' | 'failed' | 'none'> {
    let claimed: { id: number; kind: string; payload: string; due_at: number } | undefined;
    let after: Array<() => Promise<void>> = [];
    try {
      await this.jobsDb.transaction().execute(async (tx) => {
        claimed = (await this.claimNext(tx, { until })).rows[0];
        after = [];
        if (!claimed) return;
        if (isVirtual(this.clock)) this.clock.set(claimed.due_at);
        const handler = this.handlers.get(claimed.kind);
        if (handler) {
          const ctx = { tx, dueAt: claimed.due_at, now: this.clock.now(), afterCommit: (work: () => Promise<void>) => void after.push(work) };
          await handler(JSON.parse(claimed.payload), ctx);
        } else {
          this.log.warn({ kind: claimed.kind }, 'no handler for job kind; dropped');
        }
      });
    } catch (err) {
      if (!claimed) throw err;
      this.log.error({ err, kind: claimed.kind, job: claimed.id }, 'job failed; will retry');
      await this.jobsDb
        .updateTable('jobs')
        .set({ due_at: this.clock.now() + JOB_RETRY_DELAY_S })
        .where('id', '=', claimed.id)
        .execute();
      return 'failed';
    }
    if (!claimed) return 'none';
    for (const fn of this.afterJob) fn(claimed.kind, JSON.parse(claimed.payload));
    if (after.length) await this.runAfterCommit(claimed, after);
    return 'ran';
  }

  private async runAfterCommit(job: { id: number; kind: string }, work: Array<() => Promise<void>>): Promise<void> {
    // A request made by this work reads the virtual clock from the database (app.ts): it must find the time the
    // clock stands at now, the job's due time, not the time the advance in progress started from.
    if (isVirtual(this.clock)) await this.saveVirtualNow();
    for (const w of work) {
      await w().catch((err: unknown) => this.log.error({ err, kind: job.kind, job: job.id }, 'work after a job failed'));
    }
  }

  /** Settles when every advance begun in this process has ended (undefined when none runs). */
  private advancing: Promise<void> | undefined;

  /**
   * Moves a virtual clock forward by `seconds`, running everything that fell due on the way. To the requests that
   * reach this process meanwhile the advance is one step: they wait for it to end (`restoreVirtualNowIfChanged`) and
   * see the clock where it ended. Were they served in between, each would see the time of the job running then, and
   * the work it made due before the end (a rent's boot, a stop's settlement) would join the advance, which would chase
   * the load it runs under (issue 16: 13 step jobs idle, 95–100 under the mixed load).
   */
  advance(seconds: number): Promise<number> {
    if (!isVirtual(this.clock)) return Promise.reject(new Error('advance needs a virtual clock'));
    const run = this.advanceBy(this.clock, seconds);
    const ended: Promise<void> = Promise.allSettled([this.advancing, run]).then(() => {
      if (this.advancing === ended) this.advancing = undefined;
    });
    this.advancing = ended;
    return run;
  }

  private async advanceBy(clock: VirtualClock, seconds: number): Promise<number> {
    const target = clock.now() + seconds;
    await this.runDue(target);
    clock.set(target);
    await this.saveVirtualNow();
    return this.clock.now();
  }

  /** `Store.version` when the clock row was last read (SQLite), or undefined. */
  private clockReadAt: number | undefined;

  /**
   * A virtual clock survives restarts: it resumes where it stood. Every request of a virtual-clock server calls this
   * (app.ts), because processes sharing the database share the clock. On SQLite the read is skipped while
   * `Store.version` is unchanged since the last one: the version grows with every write of this process and every
   * commit of another connection, so an unchanged version means the row cannot have changed (the rule of
   * platform/db/read-cache.ts). The version is taken before the read, so a write racing it only causes another read.
   * PostgreSQL has no such version (other processes commit without notice), so the row is read every time: a cache
   * refreshed by a notification would let a request reaching this process just after another one advanced the
   * clock (and replied) see the time before the advance.
   */
  async restoreVirtualNow(): Promise<void> {
    await this.restoreVirtualNowIfChanged();
  }

  /**
   * `restoreVirtualNow`, but undefined (no promise, nothing to wait for) when the row cannot have changed. While an
   * advance runs in this process it first waits for the advance to end (`advance`), unless `withinAdvance`: a request
   * that a job replays, which the advance awaits.
   */
  restoreVirtualNowIfChanged(withinAdvance = false): Promise<void> | undefined {
    if (!isVirtual(this.clock)) return undefined;
    if (this.advancing && !withinAdvance) return this.advancing.then(() => this.restoreVirtualNowIfChanged(true));
    const version = this.store.version?.();
    if (version !== undefined && version === this.clockReadAt) return undefined;
    return this.readVirtualNow(version);
  }

  private async readVirtualNow(version: number | undefined): Promise<void> {
    if (!isVirtual(this.clock)) return;
    // Without a version (PostgreSQL) every request reads the row: reads asked for while one runs share the next.
    const value = version === undefined ? await this.sharedClockRead(undefined) : await this.readClockRow();
    if (value !== undefined) this.clock.set(value);
    this.clockReadAt = version;
  }

  private async readClockRow(): Promise<number | undefined> {
    const row = await this.store.db.selectFrom('kv').select('value').where('key', '=', VIRTUAL_CLOCK_KEY).executeTakeFirst();
    return row ? Number(row.value) : undefined;
  }

  /**
   * One read of the clock row for every caller of a batch, begun after each of their calls (platform/coalesce.ts): a
   * request still sees an advance that another process finished before the request arrived.
   */
  private readonly sharedClockRead = coalescing(
    async (callers: undefined[]) => {
      const value = await this.readClockRow();
      return callers.map(() => value);
    },
    { maxBatch: Number.MAX_SAFE_INTEGER, maxInFlight: 1 },
  );

  async saveVirtualNow(): Promise<void> {
    const value = String(this.clock.now());
    await this.store.db
      .insertInto('kv')
      .values({ key: VIRTUAL_CLOCK_KEY, value })
      .onConflict((oc) => oc.column('key').doUpdateSet({ value }))
      .execute();
  }

  /** With a real clock, polls for due work. A virtual clock runs work only when advanced. */
  start(intervalMs = 250): void {
    if (isVirtual(this.clock) || this.timer) return;
    this.timer = setInterval(() => {
      this.runDue().catch((err) => this.log.error({ err }, 'scheduler pass failed'));
    }, intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
  }

  /** Jobs due by now and not yet run, and when the oldest of them fell due (metrics: backlog and lag). */
  async backlog(): Promise<{ due: number; oldestDueAt: number | null }> {
    const r = await this.store.db
      .selectFrom('jobs')
      .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.min('due_at').as('oldest')])
      .where('due_at', '<=', this.clock.now())
      .executeTakeFirstOrThrow();
    return { due: Number(r.n), oldestDueAt: r.oldest === null ? null : Number(r.oldest) };
  }

  /** Number of jobs waiting (tests and diagnostics). */
  async pending(): Promise<number> {
    const r = await this.store.db.selectFrom('jobs').select(sql<number>`count(*)`.as('n')).executeTakeFirstOrThrow();
    return Number(r.n);
  }
}
