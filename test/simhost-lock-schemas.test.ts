// A simulated machine's runtime lock (simhost-store.ts MACHINE_RUNTIME_LOCK) is a PostgreSQL advisory lock, and those
// are the whole database's: two gpuplane databases in one PostgreSQL, a schema each (README), must not share them. A
// pass in one schema holding machine 1 must leave the other schema's machine 1 to its own pass, which takes only the
// locks it gets at once (`claimDue`). (Tests run side by side in schemas of one database: a shared lock made an
// instance miss its boot step there.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openDatabase } from '../src/database.js';
import { simhostStore } from '../src/emulator/simulated-hosts/simhost-store.js';
import { dropSchema, requirePostgres, uniqueSchema } from './helpers/harness.js';

test('a machine\'s runtime lock in one schema does not hold the same machine id in another (PostgreSQL)', async () => {
  const url = requirePostgres();
  const schemas = [uniqueSchema(), uniqueSchema()];
  const stores = [await openDatabase(url, { pgSchema: schemas[0], pgPoolSize: 2 }), await openDatabase(url, { pgSchema: schemas[1], pgPoolSize: 2 })];
  try {
    const [a, b] = stores.map((s) => simhostStore(s.db, s.dialect));
    await stores[0].db.transaction().execute(async (txA) => {
      await a.lockMachine(txA, 1);
      const claimed = await stores[1].db.transaction().execute(async (txB) => {
        await b.addDue(txB, [{ machine_id: 1, due_at: 0 }]);
        return b.claimDue(txB, 10, 10);
      });
      assert.deepEqual(claimed, [{ machineId: 1, locked: true }]);
      // In its own schema the lock holds: a second transaction there does not get it.
      const same = await stores[0].db.transaction().execute(async (txA2) => {
        await a.addDue(txA2, [{ machine_id: 1, due_at: 0 }]);
        return a.claimDue(txA2, 10, 10);
      });
      assert.deepEqual(same, [{ machineId: 1, locked: false }]);
    });
  } finally {
    await Promise.all(stores.map((s) => s.close()));
    await Promise.all(schemas.map((s) => dropSchema(s)));
  }
});
