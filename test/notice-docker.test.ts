// The notice before a stop (issue 33 item 3) on a real container: the agent's reconcile loop with the Docker runtime
// writes /run/gpuplane/stop into the container (an image FROM scratch: no /run, no shell needed for the write), sends
// SIGTERM, and SIGKILL after the desired state's stop_grace_s (not the agent's own, longer, default). A program that
// traps TERM reads the notice and exits cleanly; one that ignores TERM is killed once the grace is over. A start after
// the stop removes the old notice. Docker must be running: where it is not, this test fails; it never skips.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomInt } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { BUSYBOX_IMAGE, buildBusyboxImage, logShows } from './helpers/docker.js';
import { desiredInstance } from './agent-fake-server.js';
import { createDockerRuntime } from '../src/agent/docker-runtime.js';
import { createReconciler } from '../src/agent/reconciler.js';
import { silentLog } from '../src/agent/agent-log.js';
import { STOP_NOTICE_PATH } from '../src/agent/stop-notice.js';
import type { DesiredInstanceT } from '../src/protocol/agent-protocol-schemas.js';

const docker = new Docker();
const dir = mkdtempSync(join(tmpdir(), 'gpuplane-notice-'));
const machineId = 700_000 + randomInt(1_000_000);
const owner = randomBytes(8).toString('hex');
const runtime = createDockerRuntime({}, docker, { allowUnlimitedDisk: true });
const reconciler = createReconciler({
  runtime,
  limits: { machineId, owner, cpuCores: 2, ramMb: 512, gpuDevices: false },
  publishIp: '127.0.0.1',
  portRange: { start: 47400, end: 47449 },
  records: new Map(),
  saveRecords: () => undefined,
  now: () => Date.now() / 1000,
  hostBootTime: 0,
  isPortFree: async () => true,
  // The agent's own default, far longer than the grace the server sends: the kill must come after the server's.
  stopTimeoutS: 60,
  log: silentLog,
  onObserved: () => undefined,
});

const GRACE_S = 3;
/** Traps TERM: prints the notice it finds, then exits 0. */
const TRAPS = 'trap \'echo NOTICE:$(cat /run/gpuplane/stop); echo TERM-HANDLED; exit 0\' TERM; echo READY; while true; do sleep 0.2; done';
/** Ignores TERM: only SIGKILL ends it. */
const IGNORES = 'trap \'\' TERM; echo READY; while true; do sleep 0.2; done';

const inst = (id: number, script: string, over: Partial<DesiredInstanceT> = {}) =>
  desiredInstance({ instance_id: id, image: BUSYBOX_IMAGE, runtype: 'args', args: ['sh', '-c', script], gpu_indices: [], disk: 1, ...over });

async function converge(list: DesiredInstanceT[]): Promise<number> {
  const t0 = Date.now();
  reconciler.setDesired(list);
  await reconciler.idle();
  return (Date.now() - t0) / 1000;
}

const containerOf = (id: number) => reconciler.containerOf(id)!;
const inspect = (id: number) => docker.getContainer(containerOf(id).id).inspect();

before(async () => {
  await docker.ping();
  await buildBusyboxImage(docker, dir);
});

after(async () => {
  await converge([]).catch(() => undefined);
  await reconciler.close();
  rmSync(dir, { recursive: true, force: true });
});

test('SIGTERM with the notice, then SIGKILL after the server\'s grace: a program that traps TERM reads why and when; one that ignores TERM is killed', async () => {
  const running = [inst(1, TRAPS), inst(2, IGNORES)];
  await converge(running);
  await logShows(docker, containerOf(1).id, 'READY');
  await logShows(docker, containerOf(2).id, 'READY');

  const outbid = 'outbid: a higher bid or an on-demand rental took its GPUs; it resumes when they are free again; stopping at 2026-11-28T10:40:00Z: SIGTERM now, SIGKILL after 3 s';
  const renter = 'stopped by its renter; stopping at 2026-11-28T10:40:00Z: SIGTERM now, SIGKILL after 3 s';
  const t0 = Date.now() / 1000;
  const took = await converge([
    inst(1, TRAPS, { state: 'stopped', stop_grace_s: GRACE_S, stop_reason: outbid }),
    inst(2, IGNORES, { state: 'stopped', stop_grace_s: GRACE_S, stop_reason: renter }),
  ]);

  const [a, b] = [await inspect(1), await inspect(2)];
  assert.equal(a.State.Status, 'exited');
  assert.equal(a.State.ExitCode, 0, 'the TERM handler ended it');
  assert.equal(b.State.Status, 'exited');
  assert.equal(b.State.ExitCode, 137, 'SIGKILL ended it');
  // Killed after the grace, not before, and not after the agent's own 60 s.
  const killedAfter = Date.parse(b.State.FinishedAt) / 1000 - t0;
  assert.ok(killedAfter >= GRACE_S - 0.2 && took < GRACE_S + 15, `killed ${killedAfter.toFixed(2)} s after the stop began; the stop took ${took.toFixed(2)} s`);
  const handledAfter = Date.parse(a.State.FinishedAt) / 1000 - t0;
  assert.ok(handledAfter < GRACE_S, `the TERM handler ended it ${handledAfter.toFixed(2)} s after the stop began`);

  // What the program read, from inside the container, without any credential.
  const log = await runtime.logs(containerOf(1).id, null);
  assert.match(log, /TERM-HANDLED/);
  const notice = JSON.parse(/NOTICE:(.*)/.exec(log)![1]) as Record<string, unknown>;
  assert.equal(notice.instance_id, 1);
  assert.equal(notice.reason, outbid);
  assert.equal(notice.grace_s, GRACE_S);
  assert.equal(Number(notice.sigkill_at_unix) - Number(notice.sigterm_at_unix), GRACE_S);
  assert.ok(Math.abs(Number(notice.sigterm_at_unix) - t0) < 5, 'SIGTERM is sent when the notice says');
  assert.equal(Date.parse(String(notice.sigterm_at)) / 1000, notice.sigterm_at_unix);
  assert.equal(Date.parse(String(notice.sigkill_at)) / 1000, notice.sigkill_at_unix);

  // The container that ignored TERM had its notice too: read back from its filesystem (a tar of the one file), owned
  // by root with mode 0644, so every user of the container can read it.
  const tar = await new Promise<Buffer>((resolve, reject) => {
    void docker.getContainer(containerOf(2).id).getArchive({ path: STOP_NOTICE_PATH }).then((s) => {
      const parts: Buffer[] = [];
      s.on('data', (d: Buffer) => parts.push(d));
      s.once('end', () => resolve(Buffer.concat(parts)));
      s.once('error', reject);
    }, reject);
  });
  assert.equal(tar.subarray(0, 4).toString(), 'stop');
  assert.equal(parseInt(tar.subarray(100, 107).toString(), 8) & 0o777, 0o644);
  const size = parseInt(tar.subarray(124, 135).toString(), 8);
  const other = JSON.parse(tar.subarray(512, 512 + size).toString()) as Record<string, unknown>;
  assert.deepEqual([other.instance_id, other.reason, other.grace_s], [2, renter, GRACE_S]);

  // Started again: the old notice is gone (the agent removes it after the start).
  await converge([inst(1, TRAPS, { boot: 1, stop_grace_s: GRACE_S }), inst(2, IGNORES, { boot: 1, stop_grace_s: GRACE_S })]);
  for (const id of [1, 2]) {
    const r = await runtime.exec(containerOf(id).id, ['test', '-e', STOP_NOTICE_PATH], { maxChars: 100, timeoutS: 10 });
    assert.equal(r.exitCode, 1, `instance ${id}: no notice after the start`);
  }
});
