// Several gpuplane processes on one database (contract §1): the fleet is seeded once, and each process's offer
// index follows allocations made by the others (the database is the truth; the index is only a cache).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DIALECTS, T0, dropSchema, requirePostgres, uniqueSchema } from './helpers/harness.js';
import type { Store } from '../src/platform/db/connect.js';
import { openDatabase } from '../src/database.js';
import { VirtualClock } from '../src/platform/clock.js';
import { cryptoRandom } from '../src/platform/random.js';
import { machinesServiceFactory } from '../src/machines/machines-service.js';
import { machinesStore } from '../src/machines/machines-store.js';
import { sql } from 'kysely';

const SIM_MACHINES = 30;
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

async function twoProcesses(dialect: string): Promise<{ stores: Store[]; cleanup: () => Promise<void> }> {
  if (dialect === 'postgres') {
    const schema = uniqueSchema();
    const stores = [await openDatabase(requirePostgres(), { pgSchema: schema }), await openDatabase(requirePostgres(), { pgSchema: schema })];
    return { stores, cleanup: async () => { for (const s of stores) await s.close(); await dropSchema(schema); } };
  }
  const dir = mkdtempSync(join(tmpdir(), 'gpuplane-fleet-'));
  const url = `sqlite:${join(dir, 'db.sqlite')}`;
  const stores = [await openDatabase(url), await openDatabase(url)];
  return { stores, cleanup: async () => { for (const s of stores) await s.close(); rmSync(dir, { recursive: true, force: true }); } };
}

for (const dialect of DIALECTS) {
  test(`two processes on one ${dialect} database: seeded once, each sees the other's allocations`, async () => {
    const { stores, cleanup } = await twoProcesses(dialect);
    try {
      const clock = new VirtualClock(T0);
      const config = { mode: 'emulator' as const, seed: 3, simMachines: SIM_MACHINES };
      const [a, b] = stores.map((store) => machinesServiceFactory({ store, clock, random: cryptoRandom, config }));
      // PostgreSQL: both start at once. SQLite is a single-writer store (platform/scheduler.ts); its processes start
      // one after the other.
      const seeded =
        dialect === 'postgres' ? await Promise.all([a.ensureSeeded(), b.ensureSeeded()]) : [await a.ensureSeeded(), await b.ensureSeeded()];
      assert.deepEqual(seeded.sort(), [false, true], 'exactly one process seeds');
      const machines = await stores[0].db.selectFrom('fleet_machines').select('id').execute();
      assert.equal(machines.length, SIM_MACHINES);

      const before = await b.index.offers();
      const target = before.find((o) => o.num_gpus === o.machine.num_gpus && !o.rented)!;
      await stores[0].db.transaction().execute((tx) => a.allocate(tx, { offerId: target.id, instanceId: 1, kind: 'ondemand' }));
      // On SQLite a process learns of other connections' commits from its next turn of the event loop
      // (`Store.version`); a request that arrives after the commit is read in a later turn. Here both "processes"
      // share one event loop, so the search waits for that turn.
      await nextTurn();
      const after = await b.index.offers();
      assert.equal(after.find((o) => o.id === target.id), undefined, 'the other process no longer offers the rented bundle');
      assert.equal(after.filter((o) => o.machine.id === target.machine.id).length, 0, 'a fully rented machine offers nothing');

      await stores[1].db.transaction().execute((tx) => b.release(tx, 1));
      await nextTurn();
      assert.ok((await a.index.offers()).some((o) => o.id === target.id), 'released in one process, on offer in the other');
    } finally {
      await cleanup();
    }
  });
}

// A machine's lock is its row's alone (fleet-store.ts `machineToChange`: an UPDATE locks its target only): all of a
// host's machines join its one host row, and locking that too made every rent, fault and agent report on any machine
// of one host wait for each other (the agents bench: 5,000 machines of one host, reports queued for seconds).
// PostgreSQL only (SQLite has one writer at a time): without GPUPLANE_TEST_POSTGRES_URL it fails, naming it.
test('PostgreSQL: two machines of one host are locked at once by two transactions; one machine by one at a time', async () => {
  const { stores, cleanup } = await twoProcesses('postgres');
  try {
    const clock = new VirtualClock(T0);
    await machinesServiceFactory({ store: stores[0], clock, random: cryptoRandom, config: { mode: 'emulator', seed: 3, simMachines: SIM_MACHINES } }).ensureSeeded();
    const rows = await stores[0].db.selectFrom('fleet_machines').select(['id', 'host_id']).orderBy('id').execute();
    const [m1, m2] = rows.filter((r) => r.host_id === rows.find((x) => rows.filter((y) => y.host_id === x.host_id).length > 1)!.host_id);
    assert.ok(m1 && m2, 'the seeded fleet has a host with two machines');
    const [fa, fb] = stores.map((s) => machinesStore(s.db, 'postgres'));
    await stores[0].db.transaction().execute(async (txA) => {
      assert.equal((await fa.machineToChange(m1.id, txA))?.id, m1.id);
      await stores[1].db.transaction().execute(async (txB) => {
        await sql`set local lock_timeout = '5s'`.execute(txB);
        assert.equal((await fb.machineToChange(m2.id, txB))?.id, m2.id, 'the other machine of the host is not blocked');
      });
      await assert.rejects(
        stores[1].db.transaction().execute(async (txB) => {
          await sql`set local lock_timeout = '200ms'`.execute(txB);
          await fb.machineToChange(m1.id, txB);
        }),
        (err: { code?: string }) => err.code === '55P03',
        'the locked machine itself waits (lock_not_available)',
      );
    });
  } finally {
    await cleanup();
  }
});
