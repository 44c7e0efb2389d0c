// Volumes on a real host (issue 33 item 2), end to end with real processes: `gpuplane serve`, `gpuplane agent` with
// Docker. The host offers volume space with `create_asks` vol_size/vol_price, `search volumes` shows it (never more than
// the host's free disk), a volume too large for the host is refused; a volume made at rent (`volume_info.create_new`)
// is a Docker volume labelled as the agent's own and mounted at mount_path; its data outlives the instance and is there
// in a new instance that links it; `copy` between instances reaches the volume's path; a mounted volume cannot be
// deleted; deleting it removes the Docker volume. `vastai copy` with a local side (the client's rsync through the
// gateway) reaches the volume's path; `V.<id>` copy locations go through the instance that mounts it. Docker must be running: where it is not, this test fails.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { call, serve, type Served } from './helpers/spawn.js';
import { prepareAgentRun, startAgent, untilStatus, within as withinDeadline, type AgentProcess } from './helpers/agent-process.js';
import { BUSYBOX_IMAGE } from './helpers/docker.js';
import { makeKeyPair, ok, run } from './helpers/openssh.js';

const PORTS = { start: 47500, end: 47599 };
const GATEWAY_PORTS = '54300-54599';
const OWNER = 'gpk_e2e_volumes_owner_key_0123456789';

const docker = new Docker();
const dir = mkdtempSync(join(tmpdir(), 'gpuplane-volumes-e2e-'));
const dbFile = join(dir, 'gpuplane.db');
let server: Served | undefined;
let agent: AgentProcess | undefined;
let machineId = 0;

const context = () => `--- agent\n${agent?.output().slice(-4000)}\n--- server\n${server?.output().slice(-3000)}`;
const within = <T>(what: string, p: Promise<T>, ms = 60_000) => withinDeadline(what, p, context, ms);
const api = (method: string, path: string, k: string | null, body?: unknown) => call(server!.url, method, path, k, body);
const ours = () => docker.listContainers({ all: true, filters: { label: [`gpuplane.machine_id=${machineId}`] } });
const ourVolumes = async () => ((await docker.listVolumes({ filters: { label: [`gpuplane.machine_id=${machineId}`] } })).Volumes ?? []);

/** Runs `sh -c cmd` in the instance's container; its output (Docker's multiplexed frames taken apart). */
async function inContainer(id: number, cmd: string): Promise<string> {
  const [c] = await docker.listContainers({ filters: { label: [`gpuplane.instance_id=${id}`, `gpuplane.machine_id=${machineId}`] } });
  assert.ok(c, `instance ${id}'s container runs`);
  const exec = await docker.getContainer(c.Id).exec({ Cmd: ['sh', '-c', cmd], AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({});
  const chunks: Buffer[] = [];
  await new Promise<void>((resolve, reject) => {
    stream.on('data', (d: Buffer) => chunks.push(d));
    stream.on('end', resolve);
    stream.on('error', reject);
  });
  const all = Buffer.concat(chunks);
  const out: Buffer[] = [];
  for (let i = 0; i + 8 <= all.length; ) {
    const len = all.readUInt32BE(i + 4);
    out.push(all.subarray(i + 8, i + 8 + len));
    i += 8 + len;
  }
  return Buffer.concat(out).toString('utf8');
}

async function poll<T>(what: string, f: () => Promise<T | undefined>): Promise<T> {
  return within(what, (async () => {
    for (;;) {
      const v = await f();
      if (v !== undefined) return v;
      await new Promise((r) => setTimeout(r, 250));
    }
  })());
}

before(async () => {
  await prepareAgentRun(docker, dir, dbFile, 700_000_000);
  server = await serve({
    GPUPLANE_DATABASE_URL: `sqlite:${dbFile}`, GPUPLANE_BOOTSTRAP_API_KEY: OWNER, GPUPLANE_SECRET_KEY: 'e2e-secret-key-0123456789',
    GPUPLANE_SIM_MACHINES: '1', GPUPLANE_AGENT_OFFLINE_AFTER: '30',
    // The gateway: `vastai copy` with a local side runs the client's rsync through it (the instance's copy port).
    GPUPLANE_GATEWAY: 'true', GPUPLANE_GATEWAY_BIND: '127.0.0.1', GPUPLANE_GATEWAY_HOST: '127.0.0.1', GPUPLANE_GATEWAY_PORTS: GATEWAY_PORTS,
  });
});

after(async () => {
  if (agent && agent.child.exitCode === null) {
    agent.child.kill('SIGKILL');
    await agent.exited;
  }
  if (machineId) for (const c of await ours()) await docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => undefined);
  if (machineId) for (const n of await docker.listNetworks({ filters: { label: [`gpuplane.machine_id=${machineId}`] } })) await docker.getNetwork(n.Id).remove().catch(() => undefined);
  if (machineId) for (const v of await ourVolumes()) await docker.getVolume(v.Name).remove().catch(() => undefined);
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('a volume on a real host: offered by create_asks, made at rent, outlives its instance, copied into, deleted with its data', { timeout: 300_000 }, async () => {
  const host = await api('POST', '/_emu/users', OWNER, { email: 'vol-e2e-host@example.com' });
  const renter = await api('POST', '/_emu/users', OWNER, { email: 'vol-e2e-renter@example.com' });
  const hostKey: string = host.body.api_key;
  const renterKey: string = renter.body.api_key;
  const key = await makeKeyPair(dir, 'renter');
  assert.equal((await api('POST', '/api/v0/ssh/', renterKey, { ssh_key: key.publicKey })).status, 200);
  agent = startAgent({ url: server!.url, stateDir: join(dir, 'state'), hardwareFile: join(dir, 'hardware.json'), ports: PORTS, apiKey: hostKey });
  machineId = (await within('registration', agent.logged('machine registered'))).machine_id;
  const machine = (await api('GET', `/api/v0/machines/${machineId}`, hostKey)).body;
  const hostFree: number = (Array.isArray(machine) ? machine[0] : machine.machines?.[0] ?? machine).disk_space;
  assert.ok(hostFree > 2, `the host reports its free disk (${hostFree} GB)`);

  const search = async () => (await api('POST', '/api/v0/volumes/search/', renterKey, { machine_id: { eq: machineId } })).body.offers as any[];
  // More than the host has: the offer is the host's free disk, and a volume larger than that is refused.
  let listed = await api('PUT', '/api/v0/machines/create_asks/', hostKey, { machine: machineId, price_gpu: 0.3, price_disk: 0.1, end_date: null, vol_size: 100_000_000, vol_price: null });
  assert.equal(listed.status, 200, JSON.stringify(listed.body));
  let [offer] = await search();
  assert.equal(offer.disk_space, hostFree);
  assert.equal(offer.storage_cost, 0.1, 'vol_price null: price_disk');
  const tooBig = await api('PUT', '/api/v0/volumes/', renterKey, { id: offer.id, size: Math.ceil(hostFree) + 1 });
  assert.equal(tooBig.status, 400, JSON.stringify(tooBig.body));
  assert.match(tooBig.body.msg, /GB free on volume offer/);
  // The host's ask: 2 GB at $0.25/GB/month.
  listed = await api('PUT', '/api/v0/machines/create_asks/', hostKey, { machine: machineId, price_gpu: 0.3, price_disk: 0.1, end_date: null, vol_size: 2, vol_price: 0.25 });
  assert.equal(listed.status, 200, JSON.stringify(listed.body));
  [offer] = await search();
  assert.equal(offer.id, machineId * 100);
  assert.equal(offer.disk_space, 2);
  assert.equal(offer.storage_cost, 0.25);

  // Rent with a new 1 GB volume at /data.
  const rent = (body: Record<string, unknown>) => api('PUT', `/api/v0/asks/${machineId * 100 + 1}/`, renterKey, { image: BUSYBOX_IMAGE, runtype: 'ssh_proxy', onstart: 'true', ...body });
  const first = await rent({ volume_info: { create_new: true, volume_id: offer.id, size: 1, mount_path: '/data', name: 'e2e-data' } });
  assert.equal(first.status, 200, JSON.stringify(first.body));
  const a: number = first.body.new_contract;
  await within('instance with a new volume running', untilStatus(server!.url, renterKey, a, 'running'), 120_000);
  const [vol] = (await api('GET', '/api/v0/volumes/', renterKey)).body.volumes;
  assert.equal(vol.machine_id, machineId);
  assert.deepEqual(vol.instances, [a]);
  assert.equal(vol.storage_cost, 0.25, 'billed at the host\'s vol_price');
  assert.equal((await search())[0].disk_space, 1, 'the offer shrinks by the volume');

  // The Docker volume: the agent's own labels; mounted at /data.
  const dockerVols = await ourVolumes();
  assert.equal(dockerVols.length, 1);
  assert.equal(dockerVols[0].Labels['gpuplane.volume_id'], String(vol.id));
  assert.ok(dockerVols[0].Labels['gpuplane.owner'], 'labelled with the agent\'s owner id');
  const [ca] = await docker.listContainers({ filters: { label: [`gpuplane.instance_id=${a}`] } });
  assert.deepEqual(ca.Mounts.filter((m) => m.Type === 'volume').map((m) => [m.Name, m.Destination]), [[dockerVols[0].Name, '/data']]);
  await inContainer(a, 'echo kept across instances > /data/note.txt');

  // Destroy: the container goes, the volume and its data stay.
  assert.equal((await api('DELETE', `/api/v0/instances/${a}/`, renterKey)).status, 200);
  await poll('container removed', async () => ((await ours()).length === 0 ? true : undefined));
  assert.deepEqual((await ourVolumes()).map((v) => v.Name), [dockerVols[0].Name]);
  const after1 = (await api('GET', '/api/v0/volumes/', renterKey)).body.volumes;
  assert.deepEqual(after1.map((v: any) => [v.id, v.status]), [[vol.id, 'ready']]);

  // A new instance links it, elsewhere: the data is there.
  const second = await rent({ volume_info: { create_new: false, volume_id: vol.id, mount_path: '/mnt/vol' } });
  assert.equal(second.status, 200, JSON.stringify(second.body));
  const b: number = second.body.new_contract;
  await within('instance linking the volume running', untilStatus(server!.url, renterKey, b, 'running'), 120_000);
  assert.equal(await inContainer(b, 'cat /mnt/vol/note.txt'), 'kept across instances\n');

  // vastai copy with a local side: the reply, then the very rsync the client runs (user vastai_kaalia, module = the
  // instance id) through the gateway, into the volume's path and back out.
  mkdirSync(join(dir, 'up'), { recursive: true });
  writeFileSync(join(dir, 'up', 'local.txt'), 'from the renter\'s machine\n');
  const shell = (p: number) => `ssh -i ${key.file} -p ${p} -o StrictHostKeyChecking=no -o UserKnownHostsFile=${join(dir, 'known_hosts')} -F /dev/null`;
  const put = await api('PUT', '/api/v0/commands/rsync/', renterKey, { client_id: 'me', src_id: null, dst_id: String(b), src_path: `${join(dir, 'up')}/`, dst_path: '/mnt/vol/up/' });
  assert.equal(put.status, 200, JSON.stringify(put.body));
  const up = `rsync -arz -v --progress --rsh=ssh -e '${shell(put.body.dst_port)}' ${join(dir, 'up')}/ vastai_kaalia@${put.body.dst_addr}::${b}//mnt/vol/up/`;
  await within('rsync up into the volume', ok(run('sh', ['-c', up], { timeoutMs: 120_000 }), up), 130_000);
  assert.equal(await inContainer(b, 'cat /mnt/vol/up/local.txt'), 'from the renter\'s machine\n');
  const get = await api('PUT', '/api/v0/commands/rsync/', renterKey, { client_id: 'me', src_id: String(b), dst_id: null, src_path: '/mnt/vol/note.txt', dst_path: join(dir, 'down') });
  assert.equal(get.status, 200, JSON.stringify(get.body));
  mkdirSync(join(dir, 'down'), { recursive: true });
  const down = `rsync -arz -v --progress --rsh=ssh -e '${shell(get.body.src_port)}' vastai_kaalia@${get.body.src_addr}::${b}//mnt/vol/note.txt ${join(dir, 'down')}/`;
  await within('rsync down out of the volume', ok(run('sh', ['-c', down], { timeoutMs: 120_000 }), down), 130_000);
  assert.equal(readFileSync(join(dir, 'down', 'note.txt'), 'utf8'), 'kept across instances\n');

  // copy between instances reaches the volume's path (the copy goes into the container's root, where it is mounted).
  const c = (await rent({ onstart: 'mkdir -p /workspace/in && echo copied in > /workspace/in/c.txt' })).body.new_contract as number;
  await within('a second instance running', untilStatus(server!.url, renterKey, c, 'running'), 120_000);
  await poll('its file', async () => ((await inContainer(c, 'cat /workspace/in/c.txt 2>/dev/null')) === 'copied in\n' ? true : undefined));
  const copied = await api('PUT', '/api/v0/commands/copy_direct/', renterKey, { client_id: 'me', src_id: `C.${c}`, dst_id: `C.${b}`, src_path: '/workspace/in/', dst_path: '/mnt/vol/in/' });
  assert.equal(copied.status, 200, JSON.stringify(copied.body));
  await poll('the copy into the volume', async () => {
    const msg: string | null = (await api('GET', `/api/v0/instances/${b}/`, renterKey)).body.instances?.status_msg ?? null;
    return msg && /: (done|failed: .*)$/.test(msg) ? msg : undefined;
  }).then((msg) => assert.match(msg, /: done$/));
  // And out of it.
  const out = await api('PUT', '/api/v0/commands/copy_direct/', renterKey, { client_id: 'me', src_id: `C.${b}`, dst_id: `C.${c}`, src_path: '/mnt/vol/note.txt', dst_path: '/workspace/note.txt' });
  assert.equal(out.status, 200, JSON.stringify(out.body));
  await poll('the copy out of the volume', async () => ((await inContainer(c, 'cat /workspace/note.txt 2>/dev/null')) === 'kept across instances\n' ? true : undefined));
  // The file is there before the copy is over (its last step): the next copy into c waits for its end, or is a 409.
  await poll('the copy out of the volume over', async () => {
    const msg: string | null = (await api('GET', `/api/v0/instances/${c}/`, renterKey)).body.instances?.status_msg ?? null;
    return msg && /: (done|failed: .*)$/.test(msg) ? msg : undefined;
  }).then((msg) => assert.match(msg, /: done$/));

  // V.<id>: the client's volume locations, reached through the running instance that mounts it.
  const viaV = await api('PUT', '/api/v0/commands/copy_direct/', renterKey, { client_id: 'me', src_id: `V.${vol.id}`, dst_id: `C.${c}`, src_path: '/in/c.txt', dst_path: '/workspace/via-v.txt' });
  assert.equal(viaV.status, 200, JSON.stringify(viaV.body));
  await poll('the copy out of V.<id>', async () => ((await inContainer(c, 'cat /workspace/via-v.txt 2>/dev/null')) === 'copied in\n' ? true : undefined));
  const toLocal = await api('PUT', '/api/v0/commands/rsync/', renterKey, { client_id: 'me', src_id: `V.${vol.id}`, dst_id: null, src_path: '/', dst_path: '/tmp/x' });
  assert.equal(toLocal.status, 400, JSON.stringify(toLocal.body));
  assert.match(toLocal.body.msg, /not the local machine/);
  const unknown = await api('PUT', '/api/v0/commands/copy_direct/', renterKey, { client_id: 'me', src_id: 'V.999999999', dst_id: `C.${c}`, src_path: '/', dst_path: '/x/' });
  assert.equal(unknown.status, 404, JSON.stringify(unknown.body));

  // Mounted: not deletable. Once its instance is destroyed: deleted, and the Docker volume with it.
  const busy = await api('DELETE', `/api/v0/volumes/?id=${vol.id}`, renterKey);
  assert.equal(busy.status, 409, JSON.stringify(busy.body));
  assert.equal((await api('DELETE', `/api/v0/instances/${b}/`, renterKey)).status, 200);
  await poll('its container removed', async () => ((await ours()).some((x) => x.Labels['gpuplane.instance_id'] === String(b)) ? undefined : true));
  assert.equal((await ourVolumes()).length, 1, 'the data is still there after the second instance');
  const unmounted = await api('PUT', '/api/v0/commands/copy_direct/', renterKey, { client_id: 'me', src_id: `V.${vol.id}`, dst_id: `C.${c}`, src_path: '/', dst_path: '/x/' });
  assert.equal(unmounted.status, 409, JSON.stringify(unmounted.body));
  assert.match(unmounted.body.msg, /not mounted by a running instance/);
  const deleted = await api('DELETE', `/api/v0/volumes/?id=${vol.id}`, renterKey);
  assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
  await poll('the Docker volume removed', async () => ((await ourVolumes()).length === 0 ? true : undefined));
  assert.deepEqual((await api('GET', '/api/v0/volumes/', renterKey)).body.volumes, []);
  assert.equal((await search())[0].disk_space, 2, 'the space is offered again');
  assert.equal((await api('DELETE', `/api/v0/instances/${c}/`, renterKey)).status, 200);
});
