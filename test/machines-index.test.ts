// The offer index's read of the fleet version (fleet-index.ts): searches at once share one read, and a search that
// begins while a read is in flight is answered from a read that began after it (a write committed just before the
// search is never missed). Both with a store that reads the state alone (SQLite) and with one whose read brings the
// changed machines too (`changesSince`, PostgreSQL).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MachinesIndex } from '../src/machines/machines-index.js';
import type { MachinesStore, MachineRow } from '../src/machines/machines-store.js';
import { drawMachine } from '../src/machines/machines-catalogue.js';
import { SeededRandom } from '../src/platform/random.js';

/** Every GPU of the machine free: each of its bundles is offered. */
const freeGpus = (m: MachineRow) => Array.from({ length: m.num_gpus }, (_, gpu_index) => ({ gpu_index, instance_id: null, hold_kind: null, bid_micro: null }));

/**
 * A fleet in memory whose version reads wait until released, one by one. `changes`: the store also reads the changed
 * machines with the state (at most `limit`), as on PostgreSQL.
 */
function fakeFleet(changes?: { limitSeen?: number[] }) {
  const db = { version: 1, epoch: 'e1', machines: [] as MachineRow[] };
  const pending: Array<() => void> = [];
  let reads = 0;
  let loads = 0;
  const store = {
    async state() {
      reads++;
      // What the database holds as the read runs.
      const seen = { version: db.version, epoch: db.epoch };
      await new Promise<void>((resolve) => pending.push(resolve));
      return seen;
    },
    changesSince: changes && (async (since: number, epoch: string, limit: number) => {
      reads++;
      changes.limitSeen?.push(limit);
      const state = { version: db.version, epoch: db.epoch };
      const found = db.machines.filter((m) => m.version > since).slice(0, limit).map((row) => ({ row, gpus: freeGpus(row) }));
      await new Promise<void>((resolve) => pending.push(resolve));
      if (state.epoch !== epoch) return { state, machines: [], complete: false };
      return { state, machines: found, complete: found.length < limit };
    }),
    async machinesAbove(version: number) {
      loads++;
      return db.machines.filter((m) => m.version > version);
    },
    async gpusOf(ids: number[]) {
      return new Map(ids.map((id) => [id, freeGpus(db.machines[id - 1])]));
    },
  } as unknown as MachinesStore;
  /** Lets the reads in flight answer, until the calls given have settled. */
  async function answer<T>(...calls: Promise<T>[]): Promise<T[]> {
    let done = false;
    const all = Promise.all(calls).finally(() => (done = true));
    while (!done) {
      pending.splice(0).forEach((release) => release());
      await new Promise((r) => setImmediate(r));
    }
    return all;
  }
  /** A machine written and committed now, with a new fleet version. */
  function write(): void {
    const m = drawMachine(new SeededRandom(db.machines.length + 1), db.machines.length);
    db.version++;
    db.machines.push({
      id: db.machines.length + 1, host_id: 1, gpu_name: m.gpu_name, num_gpus: m.num_gpus, price_gpu_micro: m.price_gpu_micro,
      price_disk_micro: m.price_disk_micro, price_inetu_micro: m.price_inetu_micro, price_inetd_micro: m.price_inetd_micro,
      min_bid_micro: m.min_bid_micro, public_ipaddr: m.public_ipaddr, direct_port_start: m.direct_port_start,
      direct_port_count: m.direct_port_count, vms_enabled: 1, fault: null, heartbeat_at: null, end_date: 2e9,
      spec: JSON.stringify(m.spec), listed: 1, deleted: 0, version: db.version, created_at: 0, verification: m.verification,
    } as unknown as MachineRow);
  }
  return { store, db, answer, write, reads: () => reads, loads: () => loads, pendingReads: () => pending.length };
}

for (const kind of ['state read', 'state and changes read'] as const) {
  const make = () => fakeFleet(kind === 'state read' ? undefined : {});

  test(`searches at once share the reads of the fleet version (${kind})`, async () => {
    const f = make();
    const index = new MachinesIndex(f.store);
    await f.answer(index.current());
    const before = f.reads();
    // Eight searches asked before any read began: one read serves them all.
    const first = Array.from({ length: 8 }, () => index.current());
    while (f.pendingReads() === 0) await new Promise((r) => setImmediate(r));
    assert.equal(f.reads() - before, 1);
    // Three more while that read is in flight: it began too early for them, so they share the next one.
    const more = Array.from({ length: 3 }, () => index.current());
    await f.answer(...first, ...more);
    assert.equal(f.reads() - before, 2);
  });

  test(`a search that begins while a read is in flight sees a write committed before it began (${kind})`, async () => {
    const f = make();
    const index = new MachinesIndex(f.store);
    await f.answer(index.current());
    const early = index.current();
    // The early search's read is in flight; a machine is written and committed; then a search begins.
    while (f.pendingReads() === 0) await new Promise((r) => setImmediate(r));
    f.write();
    const late = index.current();
    const [, seen] = await f.answer(early, late);
    assert.equal(seen.changes.length, 2, 'the late search sees the new machine (one run of slots logged)');
  });
}

test('with changesSince, a search after another writer changed the fleet costs one read and no reload', async () => {
  const f = fakeFleet({});
  const index = new MachinesIndex(f.store);
  f.write();
  await f.answer(index.current());
  // The first read of an empty index loads it the long way (a new epoch for the index).
  assert.equal(f.loads(), 1);
  const reads = f.reads();
  f.write();
  f.write();
  const [seen] = await f.answer(index.current());
  assert.equal(f.reads() - reads, 1, 'one read');
  assert.equal(f.loads(), 1, 'no reload');
  assert.deepEqual([...new Set(seen.slots.filter((o) => o !== null).map((o) => o!.machine.id))].sort(), [1, 2, 3]);
});

test('with changesSince, more changed machines than one read brings, or a new epoch, are loaded the long way', async () => {
  const limits: number[] = [];
  const f = fakeFleet({ limitSeen: limits });
  const index = new MachinesIndex(f.store);
  f.write();
  await f.answer(index.current());
  // The index's first read had no epoch yet; the next one asks for changes with the store's limit.
  await f.answer(index.current());
  assert.ok(limits.length > 0 && limits[0] > 0, 'a limit is passed');
  for (let i = 0; i < limits[0] + 1; i++) f.write();
  const loads = f.loads();
  const [many] = await f.answer(index.current());
  assert.equal(f.loads(), loads + 1, 'the long way');
  assert.equal(new Set(many.slots.filter((o) => o !== null).map((o) => o!.machine.id)).size, limits[0] + 2);
  // A new epoch (the fleet seeded again): everything is loaded again.
  f.db.epoch = 'e2';
  f.db.version++;
  const generation = many.generation;
  const [again] = await f.answer(index.current());
  assert.equal(f.loads(), loads + 2);
  assert.ok(again.generation > generation, 'a new generation: every slot may have moved');
});
