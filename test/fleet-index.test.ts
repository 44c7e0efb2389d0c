// The offer index's read of the fleet version (fleet-index.ts): searches at once share one read, and a search that
// begins while a read is in flight is answered from a read that began after it (a write committed just before the
// search is never missed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FleetIndex } from '../src/fleet/fleet-index.js';
import type { FleetStore, MachineRow } from '../src/fleet/fleet-store.js';
import { drawMachine } from '../src/fleet/fleet-catalogue.js';
import { SeededRandom } from '../src/platform/random.js';

/** A fleet in memory whose version reads wait until released, one by one. */
function fakeFleet() {
  const db = { version: 1, epoch: 'e1', machines: [] as MachineRow[] };
  const pending: Array<() => void> = [];
  let reads = 0;
  const store = {
    async state() {
      reads++;
      // What the database holds as the read runs.
      const seen = { version: db.version, epoch: db.epoch };
      await new Promise<void>((resolve) => pending.push(resolve));
      return seen;
    },
    async machinesAbove(version: number) {
      return db.machines.filter((m) => m.version > version);
    },
    async gpusOf() {
      return new Map();
    },
  } as unknown as FleetStore;
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
  return { store, answer, write, reads: () => reads, pendingReads: () => pending.length };
}

test('searches at once share the reads of the fleet version', async () => {
  const f = fakeFleet();
  const index = new FleetIndex(f.store);
  await f.answer(index.current());
  const before = f.reads();
  await f.answer(...Array.from({ length: 8 }, () => index.current()));
  // The first search's read, and one for the seven that came while it was in flight.
  assert.equal(f.reads() - before, 2);
});

test('a search that begins while a read is in flight sees a write committed before it began', async () => {
  const f = fakeFleet();
  const index = new FleetIndex(f.store);
  await f.answer(index.current());
  const early = index.current();
  // The early search's read is in flight; a machine is written and committed; then a search begins.
  while (f.pendingReads() === 0) await new Promise((r) => setImmediate(r));
  f.write();
  const late = index.current();
  const [, seen] = await f.answer(early, late);
  assert.equal(seen.changes.length, 2, 'the late search sees the new machine (one run of slots logged)');
});
