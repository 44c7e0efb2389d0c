// The agent's half of volumes on real hosts (issue 33 item 2): the volume keeper (src/agent/volumes.ts) over a runtime
// stand-in (what it makes, keeps and removes, and what it tells a renter), and Docker's volumes (docker-volumes.ts)
// on the real daemon: the `local` driver's size quota refused on a host without one unless the operator allowed
// unlimited disk, the agent's labels, and no removal while a container uses the volume. Docker must be running.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import Docker from 'dockerode';
import { overSizeNote, volumeKeeper, volumeName, LABEL_VOLUME, type VolumeRuntime, type RuntimeVolume } from '../src/agent/volumes.js';
import { dockerVolumes } from '../src/agent/docker-volumes.js';
import { BUSYBOX_IMAGE, buildBusyboxImage } from './helpers/docker.js';

const owner = { machineId: 77, owner: 'abcdef0123456789' };
const silent = { info: () => undefined, warn: () => undefined };

/** A runtime stand-in: volumes in a map; `inUse` names are refused removal; `quota` says whether sizes are honoured. */
function fakeRuntime(o: { quota?: boolean; free?: number | null; inUse?: Set<string> } = {}) {
  const vols = new Map<string, RuntimeVolume & { labels: Record<string, string> }>();
  const usage = new Map<string, number>();
  const rt: VolumeRuntime = {
    async list() {
      return [...vols.values()].filter((v) => v.labels['gpuplane.owner'] === owner.owner && v.labels['gpuplane.machine_id'] === String(owner.machineId));
    },
    async create(name, labels) {
      vols.set(name, { name, labels, quota: o.quota ?? true, volumeId: labels[LABEL_VOLUME] ? Number(labels[LABEL_VOLUME]) : null });
      return { quota: o.quota ?? true };
    },
    async remove(name) {
      if (o.inUse?.has(name)) return false;
      vols.delete(name);
      return true;
    },
    async usage(names) {
      return new Map(names.filter((n) => usage.has(n)).map((n) => [n, usage.get(n)!]));
    },
    async freeBytes() {
      return o.free === undefined ? 1e12 : o.free;
    },
  };
  return { rt, vols, usage };
}

test('the keeper makes each listed volume with the agent\'s labels, keeps it unmounted, and removes one no longer listed unless in use', async () => {
  const inUse = new Set<string>();
  const { rt, vols } = fakeRuntime({ inUse });
  const k = volumeKeeper({ runtime: rt, owner, log: silent, now: () => 0 });
  // An older server says nothing of volumes: nothing is made or removed.
  k.setDesired(undefined);
  await k.converge();
  assert.equal(vols.size, 0);

  k.setDesired([{ volume_id: 5, size_gb: 10 }, { volume_id: 6, size_gb: 1 }]);
  await k.converge();
  assert.deepEqual([...vols.keys()].sort(), [volumeName(owner, 5), volumeName(owner, 6)].sort());
  assert.deepEqual(vols.get(volumeName(owner, 5))!.labels, { 'gpuplane.machine_id': '77', 'gpuplane.owner': owner.owner, 'gpuplane.volume_id': '5' });
  // Someone else's volume on the daemon, and one of ours without an id: never touched.
  vols.set('theirs', { name: 'theirs', labels: { 'gpuplane.machine_id': '77', 'gpuplane.owner': 'someone-else' }, quota: true, volumeId: 9 });
  vols.set('no-id', { name: 'no-id', labels: { 'gpuplane.machine_id': '77', 'gpuplane.owner': owner.owner }, quota: true, volumeId: null });

  // Volume 5 is deleted while a container still uses it: kept until it is free, then removed.
  inUse.add(volumeName(owner, 5));
  k.setDesired([{ volume_id: 6, size_gb: 1 }]);
  await k.converge();
  assert.ok(vols.has(volumeName(owner, 5)), 'in use: kept');
  inUse.clear();
  await k.converge();
  assert.deepEqual([...vols.keys()].sort(), ['no-id', 'theirs', volumeName(owner, 6)].sort());

  // Removed behind the agent's back: made again.
  vols.delete(volumeName(owner, 6));
  await k.converge();
  assert.ok(vols.has(volumeName(owner, 6)));
});

test('an instance\'s volumes are made before its container; one the host has no room for, or not listed, fails its create with why', async () => {
  const { rt, vols } = fakeRuntime({ free: 5e9 });
  const k = volumeKeeper({ runtime: rt, owner, log: silent, now: () => 0 });
  k.setDesired([{ volume_id: 1, size_gb: 4 }, { volume_id: 2, size_gb: 6 }]);
  await k.ensure({ mounts: [{ volume_id: 1, mount_path: '/data' }] });
  assert.ok(vols.has(volumeName(owner, 1)));
  await assert.rejects(k.ensure({ mounts: [{ volume_id: 2, mount_path: '/data' }] }), /volume 2 needs 6 GB but the host has 5\.0 GB free for volumes/);
  await assert.rejects(k.ensure({ mounts: [{ volume_id: 3, mount_path: '/data' }] }), /volume 3 is not one of this machine's volumes/);
  await k.ensure({});
});

test('without a quota, a volume over its size is measured and its instances\' renters are told; back under, the note goes', async () => {
  const { rt, usage } = fakeRuntime({ quota: false });
  let now = 0;
  const k = volumeKeeper({ runtime: rt, owner, log: silent, now: () => now });
  k.setDesired([{ volume_id: 4, size_gb: 2 }]);
  await k.converge();
  const d = { mounts: [{ volume_id: 4, mount_path: '/v' }] };
  assert.equal(k.noteFor(d), null);
  usage.set(volumeName(owner, 4), 2.5e9);
  now += 61;
  await k.converge();
  assert.equal(k.noteFor(d), overSizeNote(4, 2.5e9, 2));
  assert.match(k.noteFor(d)!, /^volume 4 holds 2\.5 GB, over its 2 GB/);
  assert.equal(k.noteFor({ mounts: [] }), null);
  usage.set(volumeName(owner, 4), 1e9);
  now += 30;
  await k.converge();
  assert.notEqual(k.noteFor(d), null, 'measured at most every VOLUME_USAGE_INTERVAL_S');
  now += 31;
  await k.converge();
  assert.equal(k.noteFor(d), null);
});

const docker = new Docker();
const tag = randomBytes(6).toString('hex');
const dockerOwner = { machineId: 990_000 + Math.floor(Math.random() * 9999), owner: `test${tag}` };
const dir = mkdtempSync(join(tmpdir(), 'gpuplane-volumes-agent-'));
after(async () => {
  for (const c of await docker.listContainers({ all: true, filters: { label: [`gpuplane.owner=${dockerOwner.owner}`] } })) await docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined);
  for (const v of (await docker.listVolumes({ filters: { label: [`gpuplane.owner=${dockerOwner.owner}`] } })).Volumes ?? []) await docker.getVolume(v.Name).remove().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

test('Docker: a size the daemon cannot enforce is refused unless unlimited disk is allowed; labelled; never removed while a container uses it', async () => {
  const info = await docker.info();
  const backing = (info.DriverStatus as [string, string][]).find(([k]) => k === 'Backing Filesystem')?.[1];
  const labels = { 'gpuplane.machine_id': String(dockerOwner.machineId), 'gpuplane.owner': dockerOwner.owner, [LABEL_VOLUME]: '1' };
  const name = volumeName(dockerOwner, 1);
  const strict = dockerVolumes(docker);
  if (backing === 'xfs') {
    // xfs (with pquota): the daemon takes the size; this host's answer is the quota.
    assert.deepEqual(await strict.create(name, labels, 1), { quota: true });
  } else {
    await assert.rejects(strict.create(name, labels, 1), /cannot limit a volume's size .*--allow-unlimited-disk/);
    assert.equal((await strict.list(dockerOwner)).length, 0, 'nothing left behind');
    assert.deepEqual(await dockerVolumes(docker, { allowUnlimitedDisk: true }).create(name, labels, 1), { quota: false });
  }
  const rt = dockerVolumes(docker, { allowUnlimitedDisk: true });
  const listed = await rt.list(dockerOwner);
  assert.deepEqual(listed.map((v) => [v.name, v.volumeId]), [[name, 1]]);
  assert.equal(typeof (await rt.freeBytes()), 'number');

  await buildBusyboxImage(docker, dir);
  const c = await docker.createContainer({
    Image: BUSYBOX_IMAGE, Cmd: ['sh', '-c', 'head -c 3000000 /dev/zero > /v/f; sleep 60'], Labels: { 'gpuplane.owner': dockerOwner.owner },
    HostConfig: { Mounts: [{ Type: 'volume', Source: name, Target: '/v' }] },
  });
  await c.start();
  assert.equal(await rt.remove(name), false, 'in use by a container: kept');
  assert.equal((await rt.list(dockerOwner)).length, 1);
  for (let i = 0; i < 50 && !((await rt.usage([name])).get(name)! >= 3_000_000); i++) await new Promise((r) => setTimeout(r, 100));
  assert.ok((await rt.usage([name])).get(name)! >= 3_000_000, 'Docker measures what it holds');
  await c.remove({ force: true });
  assert.equal(await rt.remove(name), true);
  assert.equal((await rt.list(dockerOwner)).length, 0);
  assert.equal(await rt.remove(name), true, 'gone already: the outcome wanted');
});
