// The scheduler (ARCHITECTURE: due work as rows): time order, the virtual clock stepping to each due time, retries
// that roll back, cancellation, a real-clock poll, and — on PostgreSQL — each due job running once with several
// schedulers (processes) racing over one database.
import { setImmediate as nextTurn } from 'node:timers/promises';
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { RealClock, VirtualClock } from '../src/platform/clock.js';
import type { Store } from '../src/platform/db/connect.js';
import { openDatabase } from '../src/database.js';
import { JOB_RETRY_DELAY_S, Scheduler } from '../src/platform/scheduler.js';
import { DIALECTS, PG_URL, T0, dropSchema, requirePostgres, uniqueSchema } from './helpers/harness.js';

const silent = pino({ level: 'silent' });

async function open(dialect: string, schema?: string): Promise<Store> {
  return dialect === 'postgres' ? openDatabase(requirePostgres(), { pgSchema: schema, pgPoolSize: 4 }) : openDatabase('sqlite::memory:');
}

const kvValue = async (store: Store, key: string) =>
  (await store.db.selectFrom('kv').select('value').where('key', '=', key).executeTakeFirst())?.value;

for (const dialect of DIALECTS) {
  describe(`scheduler [${dialect}]`, () => {
    let store: Store;
    let schema: string | undefined;
    before(async () => {
      schema = dialect === 'postgres' ? uniqueSchema() : undefined;
      store = await open(dialect, schema);
    });
    after(async () => {
      await store.close();
      if (schema) await dropSchema(schema);
    });
    const fresh = () => {
      const clock = new VirtualClock(T0);
      return { clock, scheduler: new Scheduler(store, clock, silent) };
    };

    test('runs due jobs in due order (ties in scheduling order), each at its due time, and leaves later ones', async () => {
      const { clock, scheduler } = fresh();
      const ran: [string, number, number][] = [];
      scheduler.register('order', async (p: { name: string }, ctx) => {
        ran.push([p.name, ctx.dueAt, clock.now()]);
      });
      await scheduler.schedule('order', T0 + 20, { name: 'c' });
      await scheduler.schedule('order', T0 + 10, { name: 'a' });
      await scheduler.schedule('order', T0 + 10, { name: 'b' });
      await scheduler.schedule('order', T0 + 100, { name: 'later' });

      assert.equal(await scheduler.runDue(T0 + 50), 3);
      assert.deepEqual(ran, [
        ['a', T0 + 10, T0 + 10],
        ['b', T0 + 10, T0 + 10],
        ['c', T0 + 20, T0 + 20],
      ]);
      assert.equal(await scheduler.pending(), 1);
      assert.equal(await scheduler.runDue(T0 + 99.999), 0);
      await scheduler.cancel('nothing-has-this-ref');
      assert.equal(await scheduler.runDue(T0 + 100), 1);
      assert.equal(await scheduler.pending(), 0);
    });

    test('advance runs work that was scheduled by work within the same window, and keeps the time', async () => {
      const { scheduler } = fresh();
      const ran: number[] = [];
      scheduler.register('chain', async (p: { n: number }, ctx) => {
        ran.push(ctx.dueAt - T0);
        if (p.n < 3) await scheduler.schedule('chain', ctx.dueAt + 10, { n: p.n + 1 }, { tx: ctx.tx });
      });
      await scheduler.schedule('chain', T0 + 5, { n: 0 });
      const now = await scheduler.advance(30);
      assert.equal(now, T0 + 30);
      assert.deepEqual(ran, [5, 15, 25]);
      assert.equal(await scheduler.pending(), 1, 'the step due at +35 waits');
      // The virtual clock is kept in the database, so another process (or a restart) resumes from it.
      const other = new VirtualClock(T0);
      await new Scheduler(store, other, silent).restoreVirtualNow();
      assert.equal(other.now(), T0 + 30);
      await store.db.deleteFrom('jobs').execute();
    });

    test('a job whose handler throws is rolled back and retried after the retry delay', async () => {
      const { clock, scheduler } = fresh();
      let attempts = 0;
      scheduler.register('flaky', async (_p, ctx) => {
        attempts++;
        await ctx.tx.insertInto('kv').values({ key: `flaky-${attempts}`, value: 'written' }).execute();
        if (attempts === 1) throw new Error('transient');
      });
      await scheduler.schedule('flaky', T0 + 1, {});
      assert.equal(await scheduler.runDue(T0 + 1), 0);
      assert.equal(attempts, 1);
      assert.equal(await kvValue(store, 'flaky-1'), undefined, 'the failed attempt wrote nothing');
      const job = await store.db.selectFrom('jobs').selectAll().where('kind', '=', 'flaky').executeTakeFirstOrThrow();
      assert.equal(job.due_at, clock.now() + JOB_RETRY_DELAY_S);

      assert.equal(await scheduler.runDue(clock.now() + JOB_RETRY_DELAY_S), 1);
      assert.equal(attempts, 2);
      assert.equal(await kvValue(store, 'flaky-2'), 'written', 'the handler and the job removal commit together');
      assert.equal(await scheduler.pending(), 0);
    });

    test('work after a job runs once it committed, outside its transaction, at its due time, before the next job', async () => {
      const { clock, scheduler } = fresh();
      const seen: string[] = [];
      let attempts = 0;
      scheduler.register('then', async (p: { name: string; fail?: boolean }, ctx) => {
        attempts++;
        await ctx.tx.insertInto('kv').values({ key: `then-${p.name}-${attempts}`, value: 'x' }).execute();
        ctx.afterCommit(async () => {
          // Outside the job's transaction: a query of its own connection (on SQLite it would wait forever inside).
          const row = await store.db.selectFrom('kv').select('key').where('key', '=', `then-${p.name}-${attempts}`).executeTakeFirst();
          seen.push(`${p.name}@${clock.now() - T0}:${row ? 'committed' : 'missing'}`);
          // The virtual clock stands at the due time for requests of another process too (it reads the database).
          seen.push(`saved ${Number(await kvValue(store, 'virtual_clock_now')) - T0}`);
        });
        if (p.fail) throw new Error('rolled back');
      });
      scheduler.register('next', async (_p, ctx) => void seen.push(`next@${ctx.dueAt - T0}`));
      await scheduler.schedule('then', T0 + 5, { name: 'a' });
      await scheduler.schedule('next', T0 + 6, {});
      await scheduler.schedule('then', T0 + 7, { name: 'b', fail: true });
      await scheduler.runDue(T0 + 8);
      assert.deepEqual(seen, ['a@5:committed', 'saved 5', 'next@6'], 'no work after the job that rolled back');
      await store.db.deleteFrom('jobs').execute();
      await store.db.deleteFrom('kv').where('key', 'like', 'then-%').execute();
    });

    test('cancel removes the jobs about a ref (of one kind when given); an unknown kind is dropped', async () => {
      const { scheduler } = fresh();
      const ran: string[] = [];
      scheduler.register('boot', async () => void ran.push('boot'));
      scheduler.register('bill', async () => void ran.push('bill'));
      await scheduler.schedule('boot', T0 + 1, {}, { ref: 'instance:1' });
      await scheduler.schedule('bill', T0 + 1, {}, { ref: 'instance:1' });
      await scheduler.schedule('boot', T0 + 1, {}, { ref: 'instance:2' });
      await scheduler.schedule('no-such-kind', T0 + 1, {});
      await scheduler.cancel('instance:1', { kind: 'boot' });
      await scheduler.cancel('instance:2');
      assert.equal(await scheduler.runDue(T0 + 1), 2);
      assert.deepEqual(ran, ['bill']);
      assert.equal(await scheduler.pending(), 0);
      assert.throws(() => scheduler.register('boot', async () => undefined), /twice/);
    });

    test('with a real clock, start() runs due work without being asked; stop() ends it', async () => {
      const clock = new RealClock();
      const scheduler = new Scheduler(store, clock, silent);
      let ran = 0;
      let first!: () => void;
      const firstRun = new Promise<void>((resolve) => (first = resolve));
      scheduler.register('tick', async () => {
        ran++;
        first();
      });
      await scheduler.schedule('tick', clock.now() - 1, {});
      scheduler.start(20);
      // The scheduler's timer does not hold the process open; this one does, and fails the test if nothing runs.
      let late: NodeJS.Timeout | undefined;
      await Promise.race([firstRun, new Promise((_, reject) => (late = setTimeout(() => reject(new Error('the due job did not run within 10 s')), 10_000)))]);
      clearTimeout(late);
      await scheduler.stop();
      assert.equal(ran, 1);
      await scheduler.schedule('tick', clock.now() - 1, {});
      // Nothing may happen now: five of its 20 ms periods pass without a run. A bounded wait is the only evidence that
      // a stopped scheduler's timer does not fire (there is nothing to wait on), and it can only pass falsely.
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(ran, 1, 'stopped');
      await store.db.deleteFrom('jobs').execute();
    });
  });
}

// Without GPUPLANE_TEST_POSTGRES_URL, open('postgres') throws: the test fails naming it.
describe('scheduler: several processes on one PostgreSQL', () => {
  /** Jobs raced over; each handler holds its row a moment so that the schedulers overlap. */
  const JOBS = 120;

  test('two schedulers with their own connections run every due job exactly once between them', async () => {
    const schema = uniqueSchema();
    const a = await open('postgres', schema);
    const b = await open('postgres', schema);
    try {
      const runs = new Map<number, string[]>();
      const make = (store: Store, name: string) => {
        const s = new Scheduler(store, new VirtualClock(T0), silent);
        s.register('race', async (p: { n: number }, ctx) => {
          runs.set(p.n, [...(runs.get(p.n) ?? []), name]);
          await ctx.tx.insertInto('kv').values({ key: `race-${p.n}`, value: name }).execute();
          await new Promise((r) => setTimeout(r, 2));
        });
        return s;
      };
      const sa = make(a, 'a');
      const sb = make(b, 'b');
      for (let n = 0; n < JOBS; n++) await sa.schedule('race', T0 + (n % 7), { n });

      const [ranA, ranB] = await Promise.all([sa.runDue(T0 + 10), sb.runDue(T0 + 10)]);
      assert.equal(ranA + ranB, JOBS);
      assert.equal(runs.size, JOBS);
      for (const [n, by] of runs) assert.equal(by.length, 1, `job ${n} ran ${by.length} times (${by.join(', ')})`);
      assert.ok(ranA > 0 && ranB > 0, `both schedulers took work (a ${ranA}, b ${ranB})`);
      const rows = await a.db.selectFrom('kv').select('key').where('key', 'like', 'race-%').execute();
      assert.equal(rows.length, JOBS);
      assert.equal(await sa.pending(), 0);
    } finally {
      await a.close();
      await b.close();
      await dropSchema(schema);
    }
  });
});

// The virtual clock is shared through the database by every process using it. Each request re-reads it
// (restoreVirtualNow); on SQLite that read is skipped while the database is unchanged, which must never hide another
// process's advance from a request that arrives after it (SQLite notices other connections' commits once a turn of
// the event loop: a request arriving after the advance is handled in a later turn).
for (const dialect of DIALECTS) {
  test(`[${dialect}] a virtual clock advanced by another process is seen by this one's next restore, every time`, async () => {
    const schema = dialect === 'postgres' ? uniqueSchema() : undefined;
    const dir = mkdtempSync(join(tmpdir(), 'gpuplane-clock-'));
    const url = dialect === 'postgres' ? PG_URL! : `sqlite:${join(dir, 'clock.db')}`;
    const a = await openDatabase(url, { pgSchema: schema, pgPoolSize: 2 });
    const b = await openDatabase(url, { pgSchema: schema, pgPoolSize: 2 });
    try {
      const clockA = new VirtualClock(T0);
      const clockB = new VirtualClock(T0);
      const sa = new Scheduler(a, clockA, silent);
      const sb = new Scheduler(b, clockB, silent);
      await sa.saveVirtualNow();
      for (let k = 1; k <= 5; k++) {
        // Restores with nothing changed in between (the cached case), then an advance by the other process.
        await sb.restoreVirtualNow();
        await sb.restoreVirtualNow();
        assert.equal(clockB.now(), T0 + 10 * (k - 1));
        await sa.advance(10);
        await nextTurn();
        await sb.restoreVirtualNow();
        assert.equal(clockB.now(), T0 + 10 * k, `advance ${k} seen`);
        // This process writing something else in between changes nothing about what it reads.
        await b.db.insertInto('kv').values({ key: `other-${k}`, value: 'x' }).execute();
        await sb.restoreVirtualNow();
        assert.equal(clockB.now(), T0 + 10 * k);
      }
    } finally {
      await a.close();
      await b.close();
      rmSync(dir, { recursive: true, force: true });
      if (schema) await dropSchema(schema);
    }
  });
}
