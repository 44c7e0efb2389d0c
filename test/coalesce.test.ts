// Group commit (src/platform/coalesce.ts): an idle call runs alone and at once; calls made while batches run go
// together in the next batch, no more than maxBatch; a failed batch fails its calls only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { coalescing } from '../src/platform/coalesce.js';

/** A batch runner that records its batches and finishes each only when told. */
function gatedRunner() {
  const batches: number[][] = [];
  const gates: (() => void)[] = [];
  const run = async (items: number[]) => {
    batches.push(items);
    await new Promise<void>((resolve) => gates.push(resolve));
    if (items.includes(-1)) throw new Error('batch failed');
    return items.map((i) => i * 10);
  };
  const release = () => gates.shift()!();
  return { batches, run, release };
}

const tick = () => new Promise((r) => setImmediate(r));

test('an idle call runs at once, alone', async () => {
  const r = gatedRunner();
  const call = coalescing(r.run, { maxBatch: 100, maxInFlight: 1 });
  const p = call(1);
  await tick();
  assert.deepEqual(r.batches, [[1]]);
  r.release();
  assert.equal(await p, 10);
});

test('calls made while a batch runs go together in the next, in order, each given its own output', async () => {
  const r = gatedRunner();
  const call = coalescing(r.run, { maxBatch: 100, maxInFlight: 1 });
  const first = call(1);
  await tick();
  const later = [2, 3, 4].map((i) => call(i));
  await tick();
  assert.deepEqual(r.batches, [[1]], 'nothing more runs while the first batch holds the only slot');
  r.release();
  await first;
  await tick();
  assert.deepEqual(r.batches, [[1], [2, 3, 4]]);
  r.release();
  assert.deepEqual(await Promise.all(later), [20, 30, 40]);
});

test('a batch holds maxBatch calls at most; maxInFlight batches run at once', async () => {
  const r = gatedRunner();
  const call = coalescing(r.run, { maxBatch: 2, maxInFlight: 2 });
  const all = [1, 2, 3, 4, 5].map((i) => call(i));
  await tick();
  assert.deepEqual(r.batches, [[1, 2], [3, 4]]);
  r.release();
  await tick();
  assert.deepEqual(r.batches, [[1, 2], [3, 4], [5]]);
  r.release();
  r.release();
  assert.deepEqual(await Promise.all(all), [10, 20, 30, 40, 50]);
});

test('a failed batch rejects its own calls; the next batch still runs', async () => {
  const r = gatedRunner();
  const call = coalescing(r.run, { maxBatch: 100, maxInFlight: 1 });
  const bad = [call(-1), call(2)];
  await tick();
  const good = call(3);
  r.release();
  for (const p of bad) await assert.rejects(p, /batch failed/);
  await tick();
  r.release();
  assert.equal(await good, 30);
});
