// End to end with real processes (`gpuplane serve`, `gpuplane agent` with Docker): the instance extras on a real
// host. Execute `ls` prints the container's real listing, once, at an unauthenticated result_url; reboot restarts
// the same container (onstart runs again) on the same GPUs; update recreates it with the new env (seen in its log);
// a snapshot pushed to a registry that cannot be reached fails, the error is reported back, and the host keeps no
// committed image. Docker must be running: where it is not, this test fails.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import Docker from 'dockerode';
import { BUSYBOX_IMAGE, logShows } from './helpers/docker.js';
import { call, serve, type Served } from './helpers/spawn.js';
import { prepareAgentRun, startAgent, untilStatus, within as withinDeadline, type AgentProcess } from './helpers/agent-process.js';

const PORTS = { start: 48200, end: 48399 };
const OWNER = 'gpk_e2e_extras_owner_key_0123456789';
/** Nothing listens on port 1: a push there fails at once. */
const DEAD_REGISTRY = '127.0.0.1:1';

const docker = new Docker();
const dir = mkdtempSync(join(tmpdir(), 'gpuplane-agent-extras-e2e-'));
const dbFile = join(dir, 'gpuplane.db');
let server: Served | undefined;
let agent: AgentProcess | undefined;
let machineId = 0;

const within = <T>(what: string, p: Promise<T>, ms = 45_000) =>
  withinDeadline(what, p, () => `--- agent\n${agent?.output().slice(-3000)}\n--- server\n${server?.output().slice(-3000)}`, ms);
const api = (method: string, path: string, key: string | null, body?: unknown) => call(server!.url, method, path, key, body);
const until = (key: string, id: number, status: string | null) => untilStatus(server!.url, key, id, status);
const ours = () => docker.listContainers({ all: true, filters: { label: [`gpuplane.machine_id=${machineId}`] } });
const gpusOf = (id: number) => {
  const db = new Database(dbFile, { readonly: true });
  try {
    return (db.prepare('SELECT gpu_indexes FROM instances WHERE id = ?').get(id) as { gpu_indexes: string }).gpu_indexes;
  } finally {
    db.close();
  }
};

/** Runs `command` as the clients do: the PUT, then GETs of result_url without a key until it answers 200 (each held by the server). */
async function execute(key: string, id: number, command: string): Promise<{ text: string; url: string }> {
  const r = await api('PUT', `/api/v0/instances/command/${id}/`, key, { command });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  for (let i = 0; i < 6; i++) {
    const res = await fetch(r.body.result_url);
    if (res.status === 200) return { text: (await res.text()).split(r.body.writeable_path || '\u0000').join(''), url: r.body.result_url };
    assert.equal(res.status, 404);
  }
  throw new Error(`no output for ${command}`);
}

before(async () => {
  await prepareAgentRun(docker, dir, dbFile, 200_000_000);
  server = await serve({
    GPUPLANE_DATABASE_URL: `sqlite:${dbFile}`, GPUPLANE_BOOTSTRAP_API_KEY: OWNER, GPUPLANE_SECRET_KEY: 'e2e-secret-key-0123456789',
    GPUPLANE_SIM_MACHINES: '1', GPUPLANE_AGENT_OFFLINE_AFTER: '30',
  });
});

after(async () => {
  if (agent && agent.child.exitCode === null) {
    agent.child.kill('SIGKILL');
    await agent.exited;
  }
  if (machineId) for (const c of await ours()) await docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => undefined);
  if (machineId) for (const n of await docker.listNetworks({ filters: { label: [`gpuplane.machine_id=${machineId}`] } })) await docker.getNetwork(n.Id).remove().catch(() => undefined);
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('a real host: execute ls, reboot, update, and a snapshot whose push fails', { timeout: 110_000 }, async () => {
  const host = await api('POST', '/_emu/users', OWNER, { email: 'extras-host@example.com' });
  const renter = await api('POST', '/_emu/users', OWNER, { email: 'extras-renter@example.com' });
  const [hostKey, renterKey]: string[] = [host.body.api_key, renter.body.api_key];
  agent = startAgent({ url: server!.url, stateDir: join(dir, 'state'), hardwareFile: join(dir, 'hardware.json'), ports: PORTS, apiKey: hostKey });
  machineId = (await within('registration', agent.logged('machine registered'))).machine_id;
  const listed = await api('PUT', '/api/v0/machines/create_asks/', hostKey, { machine: machineId, price_gpu: 0.3, price_disk: 0.1, end_date: null });
  assert.equal(listed.status, 200, JSON.stringify(listed.body));
  const rented = await api('PUT', `/api/v0/asks/${machineId * 100 + 1}/`, renterKey, {
    image: BUSYBOX_IMAGE, runtype: 'ssh_proxy', env: { GREETING: 'hi-e2e' }, onstart: 'mkdir -p /workspace && touch /workspace/made-by-onstart "/workspace/key-$CONTAINER_API_KEY" && echo "onstart says $GREETING"',
  });
  assert.equal(rented.status, 200, JSON.stringify(rented.body));
  const id: number = rented.body.new_contract;
  await within('instance running', until(renterKey, id, 'running'));
  const [container] = await ours();
  await within('onstart output', logShows(docker, container.Id, 'onstart says hi-e2e'));

  // execute: the container's real listing, served once, to a fetch without a key. onstart saw the instance key as
  // CONTAINER_API_KEY (api-spec), the one the rent answered (it names a file, so no log shows it).
  const ls = await within('execute ls', execute(renterKey, id, 'ls /workspace'));
  assert.match(rented.body.instance_api_key, /^gpi_[\w-]+$/);
  assert.equal(ls.text, `key-${rented.body.instance_api_key}\nmade-by-onstart\n`);
  const root = await within('execute ls /', execute(renterKey, id, 'ls'));
  for (const name of ['bin', 'proc', 'workspace']) assert.match(root.text, new RegExp(`^${name}$`, 'm'));
  assert.equal((await fetch(ls.url)).status, 404, 'result_url answers once');
  const missing = await within('execute ls of a missing path', execute(renterKey, id, 'ls /nope'));
  assert.match(missing.text, /nope.*No such file or directory/);
  const du = await within('execute du', execute(renterKey, id, 'du -s /workspace'));
  assert.match(du.text, /^\d+\t\/workspace\n$/);
  const refused = await api('PUT', `/api/v0/instances/command/${id}/`, renterKey, { command: 'sh -c id' });
  assert.equal(refused.status, 400);

  // reboot: the same container restarts (onstart runs again), on the same GPUs.
  const gpus = gpusOf(id);
  const startedAt = (await docker.getContainer(container.Id).inspect()).State.StartedAt;
  const reboot = await api('PUT', `/api/v0/instances/reboot/${id}/`, renterKey, {});
  assert.equal(reboot.status, 200, JSON.stringify(reboot.body));
  assert.equal((await api('GET', `/api/v0/instances/${id}/`, renterKey)).body.instances.actual_status, null);
  await within('running after reboot', until(renterKey, id, 'running'));
  assert.deepEqual((await ours()).map((c) => c.Id), [container.Id], 'the same container');
  assert.notEqual((await docker.getContainer(container.Id).inspect()).State.StartedAt, startedAt, 'started again');
  assert.equal(gpusOf(id), gpus);
  // "running" is reported once the container has started, which can be before onstart has printed: wait for its second line.
  await within('onstart ran on each start', logShows(docker, container.Id, 'onstart says hi-e2e', 2));
  const log = (await docker.getContainer(container.Id).logs({ stdout: true, stderr: true })).toString('latin1');
  assert.equal(log.split('onstart says hi-e2e').length - 1, 2, 'onstart ran once per start, no more');

  // update: a new container from the new spec; its log shows the new env.
  const upd = await api('PUT', `/api/v0/instances/update_template/${id}/`, renterKey, { id, env: { GREETING: 'hi-update' } });
  assert.equal(upd.status, 200, JSON.stringify(upd.body));
  assert.deepEqual(upd.body.updated_instance.extra_env, [['GREETING', 'hi-update']]);
  await within('running after update', until(renterKey, id, 'running'));
  const after = await ours();
  assert.equal(after.length, 1);
  assert.notEqual(after[0].Id, container.Id, 'made anew');
  assert.equal(after[0].Labels['gpuplane.generation'], '2');
  await within('new env in the log', logShows(docker, after[0].Id, 'onstart says hi-update'));
  assert.equal(gpusOf(id), gpus);

  // take snapshot to a registry nobody listens at: commit works, the push fails, the error comes back.
  const snap = await api('POST', `/api/v0/instances/take_snapshot/${id}/`, renterKey, {
    id: String(id), container_registry: DEAD_REGISTRY, personal_repo: 'e2e/snap', docker_login_user: 'me', docker_login_pass: 'e2e-registry-token', pause: 'true',
  });
  assert.equal(snap.status, 200, JSON.stringify(snap.body));
  await within('snapshot reported', agent.logged('snapshot reported'));
  const list = await api('GET', `/api/v0/instances/snapshots/${id}/`, renterKey);
  const [s] = list.body.snapshots;
  assert.equal(s.image, `${DEAD_REGISTRY}/e2e/snap:latest`);
  assert.equal(s.status, 'failed');
  assert.match(s.error, /push of 127\.0\.0\.1:1\/e2e\/snap:latest failed/);
  await assert.rejects(docker.getImage(`${DEAD_REGISTRY}/e2e/snap:latest`).inspect(), (e: any) => e.statusCode === 404, 'no committed image left on the host');
  assert.equal((await docker.getContainer(after[0].Id).inspect()).State.Running, true, 'unpaused, still running');

  assert.equal((await api('DELETE', `/api/v0/instances/${id}/`, renterKey)).status, 200);
  agent.child.kill('SIGTERM');
  assert.equal(await agent.exited, 0, agent.output());
  assert.doesNotMatch(agent.output(), /e2e-registry-token/, 'the registry password is never logged');
  assert.doesNotMatch(server!.output(), /e2e-registry-token/);
});
