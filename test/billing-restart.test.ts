// The ledger across process restarts and several processes on one database: a second is charged once, never
// twice, never skipped (issue 4 §1).
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { buildApp, type Built } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { VirtualClock } from '../src/platform/clock.js';
import { SecretBox } from '../src/platform/crypto.js';
import type { DialectName, Store } from '../src/platform/db/connect.js';
import { openDatabase } from '../src/database.js';
import { cryptoRandom } from '../src/platform/random.js';
import { cumulativeMicro } from '../src/billing/billing-accrual.js';
import { SETTLE_PERIOD_S } from '../src/billing/billing-service.js';
import { DIALECTS, dropSchema, OWNER_KEY, PG_URL, T0, uniqueSchema } from './helpers/harness.js';

interface Proc extends Built {
  store: Store;
  clock: VirtualClock;
  close(): Promise<void>;
}

/** One gpuplane process over a database that outlives it (a file for SQLite, a schema for PostgreSQL). */
async function openProcess(url: string, pgSchema?: string): Promise<Proc> {
  const config = loadConfig({
    GPUPLANE_DATABASE_URL: url,
    GPUPLANE_CLOCK: 'virtual',
    GPUPLANE_CLOCK_START: String(T0),
    GPUPLANE_BOOTSTRAP_API_KEY: OWNER_KEY,
    GPUPLANE_SECRET_KEY: 'test-secret-key-0123456789',
    GPUPLANE_LOG_LEVEL: 'silent',
    GPUPLANE_SIM_MACHINES: '5',
  });
  const store = await openDatabase(url, { pgSchema, pgPoolSize: 5 });
  const clock = new VirtualClock(T0);
  const built = await buildApp({ config, store, clock, random: cryptoRandom, log: pino({ level: 'silent' }), secretBox: new SecretBox(config.secretKey!, cryptoRandom) });
  await built.scheduler.restoreVirtualNow();
  await built.services.users.ensureOwner(OWNER_KEY, 100);
  return {
    ...built,
    store,
    clock,
    async close() {
      await built.scheduler.stop();
      await built.app.close();
      await store.close();
    },
  };
}

const meter = (userId: number, contract: string, kind: 'gpu' | 'disk', rate: number, at: number) => ({
  contract,
  type: 'instance' as const,
  kind,
  userId,
  teamId: null,
  rateMicroPerHour: rate,
  at,
  description: contract,
});

async function userId(p: Proc): Promise<number> {
  const row = await p.store.db.selectFrom('users').select('id').orderBy('id').executeTakeFirstOrThrow();
  return row.id;
}

async function charged(p: Proc, source: string): Promise<Record<string, number>> {
  const rows = await p.store.db
    .selectFrom('billing_charges')
    .innerJoin('billing_contracts', 'billing_contracts.id', 'billing_charges.contract_id')
    .select(['kind', 'amount_micro'])
    .where('source', '=', source)
    .execute();
  const out: Record<string, number> = {};
  for (const r of rows) out[r.kind] = (out[r.kind] ?? 0) + Number(r.amount_micro);
  return out;
}

for (const dialect of DIALECTS as DialectName[]) {
  describe(`billing across restarts [${dialect}]`, () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpuplane-billing-'));
    const schema = dialect === 'postgres' ? uniqueSchema() : undefined;
    const url = dialect === 'postgres' ? PG_URL! : `sqlite:${join(dir, 'db.sqlite')}`;
    after(async () => {
      if (schema) await dropSchema(schema);
      rmSync(dir, { recursive: true, force: true });
    });

    test('a restart in the middle of a segment neither skips nor repeats a second', async () => {
      const gpu = 2_345_678;
      const disk = 45_678;
      let p = await openProcess(url, schema);
      const uid = await userId(p);
      const before = Number((await p.store.db.selectFrom('users').select('credit_micro').where('id', '=', uid).executeTakeFirstOrThrow()).credit_micro);
      const start = Math.floor(p.clock.now());
      await p.store.db.transaction().execute(async (tx) => {
        await p.services.billing.startMeter(tx, meter(uid, 'instance-1', 'gpu', gpu, start));
        await p.services.billing.startMeter(tx, meter(uid, 'instance-1', 'disk', disk, start));
      });
      await p.scheduler.advance(SETTLE_PERIOD_S * 2 + 123);
      await p.close();

      // The next process resumes the virtual clock and the scheduled settlements where the first left them.
      p = await openProcess(url, schema);
      assert.equal(p.clock.now(), start + SETTLE_PERIOD_S * 2 + 123);
      await p.scheduler.advance(SETTLE_PERIOD_S * 3 + 77);
      await p.store.db.transaction().execute((tx) => p.services.billing.stopMeter(tx, { contract: 'instance-1', kind: 'gpu', at: p.clock.now() }));
      await p.close();

      p = await openProcess(url, schema);
      await p.scheduler.advance(1000);
      await p.store.db.transaction().execute((tx) => p.services.billing.stopContract(tx, { contract: 'instance-1', at: p.clock.now() }));
      const gpuSeconds = SETTLE_PERIOD_S * 5 + 200;
      const expect = { gpu: cumulativeMicro(gpu, gpuSeconds), disk: cumulativeMicro(disk, gpuSeconds + 1000) };
      assert.deepEqual(await charged(p, 'instance-1'), expect);
      const after = Number((await p.store.db.selectFrom('users').select('credit_micro').where('id', '=', uid).executeTakeFirstOrThrow()).credit_micro);
      assert.equal(before - after, expect.gpu + expect.disk);
      await p.close();
    });

    if (dialect === 'postgres') {
      test('two processes settling and stopping at once charge every second exactly once', async () => {
        const a = await openProcess(url, schema);
        const b = await openProcess(url, schema);
        const uid = await userId(a);
        const at = Math.floor(a.clock.now());
        b.clock.set(at);
        const rates = Array.from({ length: 30 }, (_, n) => 1_000_003 + n * 7919);
        await a.store.db.transaction().execute(async (tx) => {
          for (const [n, r] of rates.entries()) await a.services.billing.startMeter(tx, meter(uid, `instance-${100 + n}`, 'gpu', r, at));
        });
        // Both processes run the same due settlements and credit checks concurrently.
        const span = SETTLE_PERIOD_S * 4 + 31;
        await Promise.all([a.scheduler.advance(span), b.scheduler.advance(span)]);
        // …and stop the meters from both sides at the same second.
        const stopAt = at + span;
        await Promise.all(
          rates.flatMap((_, n) =>
            [a, b].map((p) =>
              p.store.db.transaction().execute((tx) => p.services.billing.stopContract(tx, { contract: `instance-${100 + n}`, at: stopAt })),
            ),
          ),
        );
        await Promise.all([a.scheduler.advance(SETTLE_PERIOD_S * 2), b.scheduler.advance(SETTLE_PERIOD_S * 2)]);
        for (const [n, r] of rates.entries()) assert.deepEqual(await charged(a, `instance-${100 + n}`), { gpu: cumulativeMicro(r, span) });
        await a.close();
        await b.close();
      });
    }
  });
}
