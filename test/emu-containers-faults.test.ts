// Issue 34 item 1 with a virtual clock and a file database: the simulated timings and faults apply on top of the real
// containers of a simulated machine (GPUPLANE_EMU_CONTAINERS=docker), and the agents come back after a restart:
// - the simulated pull waits for the virtual clock (nothing runs until it is advanced past the boot time);
// - fault offline on the machine silences its agent: the instance shows offline, and runs again on recover, its
//   container untouched; fault stall removes the container and hangs its pull until recover and the clock moves;
// - a slow_pull host event: a pull that starts during it takes the event's pull_seconds;
// - the server stopped and started again on the same database: the machine's agent resumes, the same container runs
//   on, execute reaches it; destroy removes it;
// - on PostgreSQL (no file to keep the agents' state beside) the emulator's stop removes its containers and gives the
//   machines back to the simulation; a rent after the restart adopts its machine anew.
// Docker must be there: where it is not, this test fails.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { BUSYBOX_IMAGE, buildBusyboxImage } from './helpers/docker.js';
import { call, freshPgDatabase, serve, type Served } from './helpers/spawn.js';
import { untilStatus, within as withinDeadline } from './helpers/agent-process.js';

const OWNER = 'gpk_e2e_emu_containers_faults_key_0123';
const docker = new Docker();
const dir = mkdtempSync(join(tmpdir(), 'gpuplane-emu-containers-faults-'));
const env = {
  GPUPLANE_DATABASE_URL: `sqlite:${join(dir, 'emulator.db')}`, GPUPLANE_BOOTSTRAP_API_KEY: OWNER, GPUPLANE_SECRET_KEY: 'e2e-secret-key-0123456789',
  GPUPLANE_MODE: 'emulator', GPUPLANE_EMU_CONTAINERS: 'docker', GPUPLANE_SIM_MACHINES: '4', GPUPLANE_SIM_BOOT_SECONDS: '30',
  GPUPLANE_CLOCK: 'virtual', GPUPLANE_AGENT_OFFLINE_AFTER: '600',
};
let server: Served | undefined;
let renterKey = '';
const owners = new Set<string>();

const context = () => `--- server\n${server?.output().slice(-6000)}`;
const within = <T>(what: string, p: Promise<T>, ms = 90_000) => withinDeadline(what, p, context, ms);
const api = (method: string, path: string, k: string | null, body?: unknown) => call(server!.url, method, path, k, body);
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const advance = async (seconds: number) => assert.equal((await api('POST', '/_emu/clock/advance', OWNER, { seconds })).status, 200);
const fault = async (body: Record<string, unknown>) => {
  const r = await api('POST', '/_emu/faults', OWNER, body);
  assert.equal(r.status, 200, JSON.stringify(r.body));
};
const containersOf = async (machineId: number) => {
  const list = (await docker.listContainers({ all: true, filters: { label: [`gpuplane.machine_id=${machineId}`] } }))
    .filter((c) => c.Labels['gpuplane.owner'] && c.Names.some((n) => n.startsWith(`/gpuplane-${machineId}-`)));
  for (const c of list) owners.add(c.Labels['gpuplane.owner']);
  return list;
};
const statusOf = async (id: number) => (await api('GET', `/api/v0/instances/${id}/`, renterKey)).body.instances?.actual_status;

async function until<T>(what: string, f: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms\n${context()}`);
    await pause(250);
  }
}

before(async () => {
  await docker.ping();
  await buildBusyboxImage(docker, dir);
  server = await serve(env);
  const renter = await api('POST', '/_emu/users', OWNER, { email: 'emu-containers-faults@example.com', credit: 1000 });
  assert.equal(renter.status, 200, JSON.stringify(renter.body));
  renterKey = renter.body.api_key;
});

after(async () => {
  await server?.stop();
  for (const owner of owners) {
    for (const c of await docker.listContainers({ all: true, filters: { label: [`gpuplane.owner=${owner}`] } })) {
      await docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => undefined);
    }
    for (const n of await docker.listNetworks({ filters: { label: [`gpuplane.owner=${owner}`] } })) await docker.getNetwork(n.Id).remove().catch(() => undefined);
  }
  rmSync(dir, { recursive: true, force: true });
});

test('virtual pull time, machine offline and recover, stall and recover, and a restart of the emulator', { timeout: 300_000 }, async () => {
  const offers = await api('GET', '/api/v0/bundles/', renterKey);
  assert.equal(offers.status, 200, JSON.stringify(offers.body));
  const offer = (offers.body.offers as Record<string, any>[])[0];
  const machineId: number = offer.machine_id;
  const rented = await api('PUT', `/api/v0/asks/${offer.id}/`, renterKey, { image: BUSYBOX_IMAGE, runtype: 'ssh', disk: 1, onstart: 'echo onstart-ran' });
  assert.equal(rented.status, 200, JSON.stringify(rented.body));
  const id: number = rented.body.new_contract;

  // The pull takes 30 s of the virtual clock: real seconds pass and nothing runs.
  await pause(3000);
  assert.deepEqual(await containersOf(machineId), []);
  assert.notEqual(await statusOf(id), 'running');
  await advance(31);
  await within('running once the clock passed the pull', untilStatus(server!.url, renterKey, id, 'running'));
  const [c] = await containersOf(machineId);
  assert.ok(c);

  // offline: the machine's agent is silent; the instance shows offline, its container runs on; recover brings it back.
  await fault({ fault: 'offline', machine_id: machineId });
  assert.equal(await statusOf(id), 'offline');
  await pause(5000);
  assert.equal(await statusOf(id), 'offline', 'the silent agent does not report it back');
  assert.equal((await docker.getContainer(c.Id).inspect()).State.Running, true);
  await fault({ fault: 'recover', machine_id: machineId });
  await within('running after recover', untilStatus(server!.url, renterKey, id, 'running'));

  // stall: the container is removed and its pull hangs; after recover the pull takes its time again.
  await fault({ fault: 'stall', instance_id: id });
  await until('container removed by stall', async () => ((await containersOf(machineId)).length === 0 ? true : undefined));
  await until('loading', async () => ((await statusOf(id)) === 'loading' ? true : undefined));
  await advance(60);
  await pause(2000);
  assert.deepEqual(await containersOf(machineId), [], 'the pull hangs while the fault stands');
  await fault({ fault: 'recover', instance_id: id });
  await pause(1000);
  await advance(31);
  await within('running after the stall', untilStatus(server!.url, renterKey, id, 'running'));
  const [again] = await containersOf(machineId);
  assert.ok(again && again.Id !== c.Id, 'a new container');

  // A slow_pull host event on the machine: a pull that starts during it takes its pull_seconds (90 s here).
  const ev = await api('POST', '/_emu/events', OWNER, { kind: 'slow_pull', machine_ids: [machineId], pull_seconds: 90, duration: 3600 });
  assert.equal(ev.status, 200, JSON.stringify(ev.body));
  await until('the event active', async () => ((await api('GET', '/_emu/events', OWNER)).body.events.some((e: any) => e.state === 'active') ? true : undefined));
  await fault({ fault: 'stall', instance_id: id });
  await fault({ fault: 'recover', instance_id: id });
  await until('loading again', async () => ((await statusOf(id)) === 'loading' ? true : undefined));
  await pause(1000);
  await advance(40);
  await pause(2500);
  assert.notEqual(await statusOf(id), 'running', 'the slow pull is not done after 40 s');
  await advance(60);
  await within('running after the slow pull', untilStatus(server!.url, renterKey, id, 'running'));
  const [slow] = await containersOf(machineId);
  assert.ok(slow);

  // A restart on the same database: the agent resumes; the same container runs on.
  await server!.stop();
  assert.equal((await docker.getContainer(slow.Id).inspect()).State.Running, true, 'the containers outlive the emulator');
  server = await serve(env);
  await until('the agent heard again', async () => {
    const r = await api('PUT', `/api/v0/instances/command/${id}/`, renterKey, { command: 'ls /usr/local/bin' });
    if (r.status !== 200) return undefined;
    for (let i = 0; i < 3; i++) {
      const res = await fetch(r.body.result_url);
      if (res.status === 200) return (await res.text()).includes('nvidia-smi') ? true : undefined;
    }
    return undefined;
  }, 90_000);
  assert.equal(await statusOf(id), 'running');
  assert.deepEqual((await containersOf(machineId)).map((x) => x.Id), [slow.Id]);

  assert.equal((await api('DELETE', `/api/v0/instances/${id}/`, renterKey)).status, 200);
  await until('container removed', async () => ((await containersOf(machineId)).length === 0 ? true : undefined));
});

test('PostgreSQL: a stop gives the machines back to the simulation; a rent after the restart adopts anew', { timeout: 300_000 }, async () => {
  await server?.stop();
  server = undefined;
  const pg = await freshPgDatabase();
  try {
    const pgEnv = { ...env, GPUPLANE_DATABASE_URL: pg.url, GPUPLANE_CLOCK: 'real', GPUPLANE_SIM_BOOT_SECONDS: '1' };
    server = await serve(pgEnv);
    const renter = await api('POST', '/_emu/users', OWNER, { email: 'emu-containers-pg@example.com', credit: 1000 });
    renterKey = renter.body.api_key;
    const offer = ((await api('GET', '/api/v0/bundles/', renterKey)).body.offers as Record<string, any>[])[0];
    const rent = async () => {
      const r = await api('PUT', `/api/v0/asks/${offer.id}/`, renterKey, { image: BUSYBOX_IMAGE, runtype: 'ssh', disk: 1 });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      await within('running', untilStatus(server!.url, renterKey, r.body.new_contract, 'running'));
      return r.body.new_contract as number;
    };
    const first = await rent();
    assert.equal((await containersOf(offer.machine_id)).length, 1);
    await server.stop();
    assert.deepEqual(await containersOf(offer.machine_id), [], 'the containers went with the emulator');

    server = await serve(pgEnv);
    assert.equal(await statusOf(first), 'running', 'simulated again, it runs on');
    await pause(2000);
    assert.deepEqual(await containersOf(offer.machine_id), []);
    assert.equal((await api('DELETE', `/api/v0/instances/${first}/`, renterKey)).status, 200);
    await until('the GPUs free again', async () => (((await api('GET', '/api/v0/bundles/', renterKey)).body.offers as Record<string, any>[]).some((o) => o.id === offer.id) ? true : undefined));
    const second = await rent();
    const [c] = await containersOf(offer.machine_id);
    assert.equal(c?.Labels['gpuplane.instance_id'], String(second), 'a real container again');
    assert.equal((await api('DELETE', `/api/v0/instances/${second}/`, renterKey)).status, 200);
    await until('container removed', async () => ((await containersOf(offer.machine_id)).length === 0 ? true : undefined));
  } finally {
    await server?.stop();
    server = undefined;
    await pg.drop();
  }
});
