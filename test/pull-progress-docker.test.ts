// Pull progress from a real `docker pull` (issue 33 item 4): the Docker runtime pulls from a registry served here
// (test/helpers/local-registry.ts: random layers, sent at a set rate), hands each of the daemon's progress messages to
// the reconcile loop, which sums them (protocol/pull-progress.ts) and reports them at most every
// PULL_REPORT_INTERVAL_S, each report within 5 s of the last while the pull goes on; the figures end at the layers'
// full size. Docker must be running: where it is not, this test fails; it never skips.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomInt } from 'node:crypto';
import Docker from 'dockerode';
import { createDockerRuntime } from '../src/agent/docker-runtime.js';
import { createReconciler, PULL_REPORT_INTERVAL_S } from '../src/agent/reconciler.js';
import { silentLog } from '../src/agent/agent-log.js';
import { pullProgress, pullProgressText, type DockerProgressEvent } from '../src/protocol/pull-progress.js';
import type { ObservedInstanceT, PullProgressT } from '../src/protocol/agent-protocol-schemas.js';
import { desiredInstance } from './agent-fake-server.js';
import { startLocalRegistry, type LocalRegistry } from './helpers/local-registry.js';

const docker = new Docker();
const refs: string[] = [];
const registries: LocalRegistry[] = [];
after(async () => {
  for (const r of refs) await docker.getImage(r).remove({ force: true }).catch(() => undefined);
  for (const r of registries) await r.close();
});

test('a real pull: every layer\'s progress summed, up to the image\'s full size; the daemon\'s messages as the fixture has them', async () => {
  const reg = await startLocalRegistry({ layerMb: [6, 12, 3], bytesPerSecond: 8_000_000 });
  registries.push(reg);
  refs.push(reg.ref);
  const events: DockerProgressEvent[] = [];
  await createDockerRuntime({}, docker).ensureImage(reg.ref, null, { onProgress: (e) => events.push(e) });
  const p = pullProgress();
  const seen: (PullProgressT | null)[] = [];
  for (const e of events) {
    p.add(e);
    seen.push(p.summary());
  }
  const total = reg.layerSizes.reduce((a, b) => a + b, 0);
  assert.deepEqual(p.summary(), { phase: 'extracting', done: total, total });
  const statuses = new Set(events.map((e) => e.status));
  for (const s of ['Pulling fs layer', 'Downloading', 'Download complete', 'Extracting', 'Pull complete']) assert.ok(statuses.has(s), `the daemon said ${s}: ${[...statuses].join(', ')}`);
  const downloading = seen.filter((s) => s?.phase === 'downloading');
  assert.ok(downloading.length >= 10, `progress while downloading (${downloading.length} figures)`);
  assert.ok(downloading.some((s) => s!.total === total && s!.done < total / 2), 'the whole size known while less than half is down');
});

test('the reconcile loop reports a real pull\'s progress at least every 5 s and at most every PULL_REPORT_INTERVAL_S', async () => {
  // Two layers downloaded side by side at 3 MB/s each: about 8 s, so several reports.
  const reg = await startLocalRegistry({ layerMb: [20, 24], bytesPerSecond: 3_000_000 });
  registries.push(reg);
  refs.push(reg.ref);
  const reports: { at: number; pull: PullProgressT | undefined; state: string }[] = [];
  const owner = randomBytes(8).toString('hex');
  const reconciler = createReconciler({
    runtime: createDockerRuntime({}, docker, { allowUnlimitedDisk: true }),
    limits: { machineId: 800_000 + randomInt(1_000_000), owner, cpuCores: 2, ramMb: 512, gpuDevices: false },
    publishIp: '127.0.0.1', portRange: { start: 47450, end: 47499 }, records: new Map(), saveRecords: () => undefined,
    now: () => Date.now() / 1000, hostBootTime: 0, isPortFree: async () => true, stopTimeoutS: 1, log: silentLog,
    onObserved: (o: ObservedInstanceT[]) => reports.push({ at: Date.now() / 1000, pull: o[0]?.pull, state: o[0]?.state }),
  });
  try {
    // The image has no program: the create fails after the pull, which is all this test needs.
    reconciler.setDesired([desiredInstance({ instance_id: 1, image: reg.ref, runtype: 'args', args: ['/nothing'], gpu_indices: [], disk: 1 })]);
    await reconciler.idle();
  } finally {
    reconciler.setDesired([]);
    await reconciler.idle();
    await reconciler.close();
  }
  const pulling = reports.filter((r) => r.state === 'pulling');
  const withProgress = pulling.filter((r) => r.pull);
  assert.ok(withProgress.length >= 3, `reports with progress: ${withProgress.length}`);
  const total = reg.layerSizes.reduce((a, b) => a + b, 0);
  assert.ok(withProgress.some((r) => r.pull!.phase === 'downloading' && r.pull!.done > 0 && r.pull!.done < total), 'a figure in the middle of the download');
  for (let i = 1; i < withProgress.length; i++) {
    const gap = withProgress[i].at - withProgress[i - 1].at;
    assert.ok(gap <= 5, `reports ${gap.toFixed(2)} s apart: ${withProgress.map((r) => pullProgressText(r.pull)).join(' | ')}`);
    assert.ok(gap >= PULL_REPORT_INTERVAL_S - 0.1, `reports ${gap.toFixed(2)} s apart, under the ${PULL_REPORT_INTERVAL_S} s throttle`);
  }
});
