// Pull progress (issue 33 item 4): Docker's per-layer pull messages summed into one figure for the image, and the
// words the instance's status_msg says it in. Fed from a Docker pull stream (test/fixtures/docker-pull-progress.jsonl:
// the Engine API's message shapes, three layers to fetch and one already on the host); no registry is reachable here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { formatBytes, pullProgress, pullProgressText, type DockerProgressEvent } from '../src/protocol/pull-progress.js';

const events = readFileSync(new URL('./fixtures/docker-pull-progress.jsonl', import.meta.url), 'utf8')
  .trim().split('\n').map((l) => JSON.parse(l) as DockerProgressEvent);
const SIZES = 49_557_601 + 24_050_000 + 211_000_000;

test('the layers are summed: bytes downloaded of the sizes known, then bytes extracted; a layer already on the host counts for nothing', () => {
  const p = pullProgress();
  assert.equal(p.summary(), null, 'nothing known before the first layer');
  const seen = [];
  for (const e of events) {
    p.add(e);
    seen.push(p.summary());
  }
  // The first Downloading names the first size.
  assert.deepEqual(seen[6], { phase: 'downloading', done: 1_048_576, total: 49_557_601 });
  assert.equal(pullProgressText(seen[6]), 'pulling image: 1.0 MB of 49.6 MB (2%)');
  // One layer extracting while another still downloads: still the download, over all three layers now sized.
  assert.deepEqual(seen[15], { phase: 'downloading', done: 49_557_601 + 24_050_000 + 2_097_152, total: SIZES });
  assert.equal(pullProgressText(seen[15]), 'pulling image: 75.7 MB of 284.6 MB (26%)');
  // All downloaded: extraction's bytes.
  assert.deepEqual(seen[21], { phase: 'extracting', done: 49_557_601 + 12_025_000, total: SIZES });
  assert.equal(pullProgressText(seen[21]), 'pulling image: extracting 61.6 MB of 284.6 MB (21%)');
  assert.deepEqual(p.summary(), { phase: 'extracting', done: SIZES, total: SIZES });
  assert.equal(pullProgressText(p.summary()), 'pulling image: extracting 284.6 MB of 284.6 MB (100%)');
  // Within a phase the figure never goes back, and never passes its total.
  for (let i = 1; i < seen.length; i++) {
    const [a, b] = [seen[i - 1], seen[i]];
    if (a && b && a.phase === b.phase) assert.ok(b.done >= a.done && b.total >= a.total, `step ${i}`);
    if (b) assert.ok(b.done <= b.total, `step ${i}: ${b.done} of ${b.total}`);
  }
});

test('the words: decimal units as Docker prints them, the issue\'s example, and the plain words before any size', () => {
  assert.equal(pullProgressText({ phase: 'downloading', done: 1_200_000_000, total: 4_800_000_000 }), 'pulling image: 1.2 GB of 4.8 GB (25%)');
  assert.equal(pullProgressText(null), 'pulling the image');
  assert.equal(pullProgressText({ phase: 'downloading', done: 0, total: 0 }), 'pulling the image');
  assert.equal(formatBytes(999), '999 B');
  assert.equal(formatBytes(1000), '1.0 kB');
  assert.equal(formatBytes(2_500_000_000_000), '2.5 TB');
});

test('messages that say nothing of bytes are ignored; an error message does not break the sum', () => {
  const p = pullProgress();
  p.add({ status: 'Pulling from library/busybox', id: 'latest' });
  p.add({ status: 'Digest: sha256:00' });
  p.add({ error: 'manifest unknown' });
  assert.equal(p.summary(), null);
  p.add({ status: 'Downloading', id: 'x', progressDetail: { current: 5, total: 10 } });
  p.add({ status: 'Downloading', id: 'x', progressDetail: { current: -3, total: Number.NaN } });
  assert.deepEqual(p.summary(), { phase: 'downloading', done: 0, total: 10 });
});
