// Billing: GET /api/v0/charges/ pages of 500 over 1,000,000 charge rows, and the ledger settling 10,000 running
// instances (gpu + disk meters) through one simulated hour. In-process (the app as main.ts builds it, requests
// through Fastify's inject), on a SQLite file, so the figures are the service's own work, not the network's.
import { join } from 'node:path';
import { sql } from 'kysely';
import { pino } from 'pino';
import { buildApp, type Built } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { VirtualClock } from '../src/platform/clock.js';
import { SecretBox } from '../src/platform/crypto.js';
import type { Store } from '../src/platform/db/connect.js';
import { openDatabase } from '../src/database.js';
import { cryptoRandom } from '../src/platform/random.js';
import { BENCH_KEY, defineBench, median } from './lib.js';

const DAY = 86_400;
const START = 1_800_000_000 - (1_800_000_000 % DAY);
const CONTRACTS = 20_000;
/** Days each contract has charges on: 20,000 × 50 = 1,000,000 rows. */
const DAYS_EACH = 50;
/** The queried 30 days: in the middle of the data, where most contracts overlap. */
const RANGE_END_DAY = 100;
const PAGE = 500;
const REQUESTS = 200;
const INSTANCES = 10_000;
const USERS = 100;
const P99_TARGET_MS = 50;
const ACCRUAL_TARGET_MS = 2000;

async function open(file: string): Promise<Built & { store: Store; clock: VirtualClock; close(): Promise<void> }> {
  const url = `sqlite:${file}`;
  const config = loadConfig({
    GPUPLANE_DATABASE_URL: url,
    GPUPLANE_CLOCK: 'virtual',
    GPUPLANE_CLOCK_START: String(START),
    GPUPLANE_BOOTSTRAP_API_KEY: BENCH_KEY,
    GPUPLANE_SECRET_KEY: 'bench-secret-key-0123456789',
    GPUPLANE_LOG_LEVEL: 'silent',
    GPUPLANE_SIM_MACHINES: '5',
  });
  const store = await openDatabase(url);
  const clock = new VirtualClock(START);
  const built = await buildApp({ config, store, clock, random: cryptoRandom, log: pino({ level: 'silent' }), secretBox: new SecretBox(config.secretKey!, cryptoRandom) });
  await built.services.users.ensureOwner(BENCH_KEY, 1e9);
  return { ...built, store, clock, close: async () => (await built.app.close(), await store.close()) };
}

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];

export default defineBench({
  name: 'charges',
  description: 'charges API over 1,000,000 charge rows (page of 500) and accrual of 10,000 running instances for a simulated hour (SQLite)',
  async run(ctx) {
    const figures = [];
    {
      const app = await open(join(ctx.tmpDir, 'charges.db'));
      try {
        const owner = await app.store.db.selectFrom('users').select('id').executeTakeFirstOrThrow();
        const t0 = performance.now();
        // Contract i has a gpu and a disk row on each of DAYS_EACH / 2 consecutive days, starting on a day spread over
        // the first 100: DAYS_EACH rows per contract.
        await sql`
          WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${CONTRACTS})
          INSERT INTO billing_contracts (source, type, user_id, team_id, description, metadata, tree_key, start_at, end_at, live)
          SELECT 'instance-' || i, 'instance', ${owner.id}, NULL, 'RTX 4090 x1 instance ' || i, '{}', i,
                 ${START} + ((i * 100) / ${CONTRACTS}) * ${DAY}, ${START} + ((i * 100) / ${CONTRACTS} + ${DAYS_EACH / 2}) * ${DAY} - 1, 0
          FROM n`.execute(app.store.db);
        await sql`
          WITH RECURSIVE d(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM d WHERE k < ${DAYS_EACH - 1})
          INSERT INTO billing_charges (contract_id, kind, day, amount_micro, start_at, end_at)
          SELECT c.id, CASE WHEN d.k % 2 = 0 THEN 'gpu' ELSE 'disk' END, c.start_at + (d.k / 2) * ${DAY},
                 1000 + c.id + d.k, c.start_at + (d.k / 2) * ${DAY}, c.start_at + (d.k / 2 + 1) * ${DAY} - 1
          FROM billing_contracts c, d`.execute(app.store.db);
        const rows = await app.store.db.selectFrom('billing_charges').select(sql<number>`count(*)`.as('n')).executeTakeFirstOrThrow();
        ctx.log(`  seeded ${rows.n} charge rows over ${CONTRACTS} contracts in ${Math.round(performance.now() - t0)} ms`);

        const filters = JSON.stringify({ day: { gte: START + (RANGE_END_DAY - 30) * DAY, lte: START + RANGE_END_DAY * DAY } });
        const times: number[] = [];
        let token: string | null = null;
        let total = 0;
        for (let r = 0; r < REQUESTS + 10; r++) {
          const query: Record<string, string> = { select_filters: filters, limit: String(PAGE), ...(token ? { after_token: token } : {}) };
          const t = performance.now();
          const res = await app.app.inject({ method: 'GET', url: '/api/v0/charges/', query, headers: { authorization: `Bearer ${BENCH_KEY}` } });
          const ms = performance.now() - t;
          if (res.statusCode !== 200) throw new Error(`charges answered ${res.statusCode}: ${res.body}`);
          const body = res.json();
          total = body.total;
          token = body.next_token;
          if (r >= 10) times.push(ms); // the first requests warm the caches
        }
        ctx.log(`  ${total} contracts match the 30-day range; pages walked with next_token`);
        figures.push(
          { name: 'charges page of 500: p50', value: Math.round(median(times) * 10) / 10, unit: 'ms' },
          { name: 'charges page of 500: p99', value: Math.round(percentile(times, 0.99) * 10) / 10, unit: 'ms', target: { op: '<=' as const, value: P99_TARGET_MS } },
        );
      } finally {
        await app.close();
      }
    }
    {
      const app = await open(join(ctx.tmpDir, 'accrual.db'));
      try {
        const users: number[] = [];
        for (let u = 0; u < USERS; u++) {
          const created = await app.services.users.createUser({ email: `bench${u}@example.com`, credit: 1e6 });
          users.push(created.id);
        }
        // Seeded as the state 10,000 startMeter calls leave (contract, gpu and disk meters per instance) in three
        // statements, then one real startMeter opens the settlement chain: the measure is the hour, not the setup.
        const at = app.clock.now();
        await sql`
          WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ${INSTANCES})
          INSERT INTO billing_contracts (source, type, user_id, team_id, description, metadata, tree_key, start_at, end_at, live)
          SELECT 'instance-' || i, 'instance', ${users[0]} + (i % ${USERS}), NULL, 'instance ' || i, '{}', i, CAST(${at} AS BIGINT), CAST(${at} AS BIGINT), 2
          FROM k`.execute(app.store.db);
        for (const [kind, rate] of [['disk', sql`11111 + (id % 97)`], ['gpu', sql`400000 + id`]] as const) {
          await sql`
            INSERT INTO billing_meters (contract_id, kind, user_id, rate_micro_per_hour, seg_start, settled_until, seg_charged_micro, running)
            SELECT id, ${kind}, user_id, ${rate}, start_at, start_at, 0, 1 FROM billing_contracts`.execute(app.store.db);
        }
        await app.store.db.transaction().execute((tx) =>
          app.services.billing.startMeter(tx, { contract: 'instance-0', type: 'instance', kind: 'gpu', userId: users[0], teamId: null, at, description: 'instance 0', rateMicroPerHour: 400_000 }),
        );
        const t1 = performance.now();
        await app.scheduler.advance(3600);
        const accrualMs = performance.now() - t1;
        const settled = await app.store.db.selectFrom('billing_charges').select(sql<number>`sum(amount_micro)`.as('s')).executeTakeFirstOrThrow();
        ctx.log(`  one simulated hour settled $${(Number(settled.s) / 1e6).toFixed(2)} of charges`);
        figures.push({ name: `accrual of ${INSTANCES} instances, 1 simulated hour`, value: Math.round(accrualMs), unit: 'ms', target: { op: '<=' as const, value: ACCRUAL_TARGET_MS } });
      } finally {
        await app.close();
      }
    }
    return figures;
  },
});
