// Several gpuplane processes on one database (contract §1): the fleet is seeded once, and each process's offer
// index follows allocations made by the others (the database is the truth; the index is only a cache).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DIALECTS, PG_URL, T0, dropSchema, uniqueSchema } from './helpers/harness.js';
import type { Store } from '../src/platform/db/connect.js';
import { openDatabase } from '../src/database.js';
import { VirtualClock } from '../src/platform/clock.js';
import { cryptoRandom } from '../src/platform/random.js';
import { fleetServiceFactory } from '../src/fleet/fleet-service.js';

const SIM_MACHINES = 30;

async function twoProcesses(dialect: string): Promise<{ stores: Store[]; cleanup: () => Promise<void> }> {
  if (dialect === 'postgres') {
    const schema = uniqueSchema();
    const stores = [await openDatabase(PG_URL!, { pgSchema: schema }), await openDatabase(PG_URL!, { pgSchema: schema })];
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
      const [a, b] = stores.map((store) => fleetServiceFactory({ store, clock, random: cryptoRandom, config }));
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
      const after = await b.index.offers();
      assert.equal(after.find((o) => o.id === target.id), undefined, 'the other process no longer offers the rented bundle');
      assert.equal(after.filter((o) => o.machine.id === target.machine.id).length, 0, 'a fully rented machine offers nothing');

      await stores[1].db.transaction().execute((tx) => b.release(tx, 1));
      assert.ok((await a.index.offers()).some((o) => o.id === target.id), 'released in one process, on offer in the other');
    } finally {
      await cleanup();
    }
  });
}
