// On SQLite the offer index reuses its read of the fleet version while the database has not changed (fleet-index.ts,
// platform/db/read-cache.ts): searches one after another cost no statement, and any write, by this connection or by
// another on the same file, makes the next search read again and see it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { sql } from 'kysely';
import { openDatabase } from '../src/database.js';
import { machinesServiceFactory } from '../src/machines/machines-service.js';
import { MachinesIndex } from '../src/machines/machines-index.js';
import { machinesStore } from '../src/machines/machines-store.js';
import { readCache } from '../src/platform/db/read-cache.js';
import { RealClock } from '../src/platform/clock.js';
import { cryptoRandom } from '../src/platform/random.js';

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

test('the fleet version read is reused while the database is unchanged, and read again after any write (SQLite)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gpuplane-index-reuse-'));
  const file = join(dir, 'gpuplane.db');
  const store = await openDatabase(`sqlite:${file}`);
  try {
    await machinesServiceFactory({ store, clock: new RealClock(), random: cryptoRandom, config: { mode: 'emulator', seed: 3, simMachines: 20 } }).ensureSeeded();
    const fleet = machinesStore(store.db, store.dialect);
    let reads = 0;
    const counted = { ...fleet, state: (...a: Parameters<typeof fleet.state>) => (reads++, fleet.state(...a)) };
    const index = new MachinesIndex(counted, readCache(store));
    const priceOf = async (machineId: number) => (await index.offers()).find((o) => o.machine.id === machineId)!.machine.price_gpu_micro;

    const before = await priceOf(1);
    await nextTurn();
    const afterFirst = reads;
    for (let i = 0; i < 5; i++) {
      await index.offers();
      await nextTurn();
    }
    assert.equal(reads, afterFirst, 'no write: the state read is reused');

    // A write through this process's connection, as a price change writes: seen by the very next search.
    await sql`UPDATE fleet_state SET version = version + 1 WHERE id = 1`.execute(store.db);
    await sql`UPDATE fleet_machines SET price_gpu_micro = ${before + 1}, version = (SELECT version FROM fleet_state WHERE id = 1) WHERE id = 1`.execute(store.db);
    assert.equal(await priceOf(1), before + 1);
    assert.equal(reads, afterFirst + 1);

    // A commit by another connection to the file: seen once the turn it happened in is over.
    await nextTurn();
    const other = new Database(file);
    try {
      other.exec(`UPDATE fleet_state SET version = version + 1 WHERE id = 1;
        UPDATE fleet_machines SET price_gpu_micro = ${before + 2}, version = (SELECT version FROM fleet_state WHERE id = 1) WHERE id = 1;`);
    } finally {
      other.close();
    }
    await nextTurn();
    assert.equal(await priceOf(1), before + 2);
    assert.equal(reads, afterFirst + 2);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
