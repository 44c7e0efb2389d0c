// `vastai copy A:/path B:/path` end to end (issue 31 item 6), with real processes: `gpuplane serve`, `gpuplane agent`
// with Docker and its tunnel, two busybox instances (no rsync in the image): PUT /api/v0/commands/copy_direct/ has the
// server's rsync pull from instance A's rsync daemon and push to B's, each a stream through the agent's tunnel (the
// host's rsync, chrooted in the container), and the destination's status_msg says when it is done; the files are then
// in B's container, byte for byte. A copy of a path that is not there says so in the status; cancel of a finished copy
// is a plain success. Docker must be there: where it is not, this test fails.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { call, serve, type Served } from './helpers/spawn.js';
import { prepareAgentRun, startAgent, untilStatus, within as withinDeadline, type AgentProcess } from './helpers/agent-process.js';
import { BUSYBOX_IMAGE } from './helpers/docker.js';

const PORTS = { start: 48900, end: 48999 };
const OWNER = 'gpk_e2e_copy_direct_owner_key_0123456';

const docker = new Docker();
const dir = mkdtempSync(join(tmpdir(), 'gpuplane-copy-e2e-'));
const dbFile = join(dir, 'gpuplane.db');
let server: Served | undefined;
let agent: AgentProcess | undefined;
let machineId = 0;
let renterKey = '';

const context = () => `--- agent\n${agent?.output().slice(-4000)}\n--- server\n${server?.output().slice(-4000)}`;
const within = <T>(what: string, p: Promise<T>, ms = 60_000) => withinDeadline(what, p, context, ms);
const api = (method: string, path: string, k: string | null, body?: unknown) => call(server!.url, method, path, k, body);
const ours = () => docker.listContainers({ all: true, filters: { label: [`gpuplane.machine_id=${machineId}`] } });

/** Runs `sh -c cmd` in the instance's container; its output. */
async function inContainer(id: number, cmd: string): Promise<string> {
  const [c] = await docker.listContainers({ filters: { label: [`gpuplane.instance_id=${id}`] } });
  assert.ok(c, `instance ${id}'s container runs`);
  const exec = await docker.getContainer(c.Id).exec({ Cmd: ['sh', '-c', cmd], AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({});
  const chunks: Buffer[] = [];
  await new Promise<void>((resolve, reject) => {
    stream.on('data', (d: Buffer) => chunks.push(d));
    stream.on('end', resolve);
    stream.on('error', reject);
  });
  // Docker's multiplexed frames: an 8-byte header, then the payload.
  const all = Buffer.concat(chunks);
  const out: Buffer[] = [];
  for (let i = 0; i + 8 <= all.length; ) {
    const len = all.readUInt32BE(i + 4);
    out.push(all.subarray(i + 8, i + 8 + len));
    i += 8 + len;
  }
  return Buffer.concat(out).toString('utf8');
}

/** The instance's status_msg once it reads as a copy's end (done, failed or canceled). */
async function copyOutcome(id: number): Promise<string> {
  for (;;) {
    const res = await api('GET', `/api/v0/instances/${id}/`, renterKey);
    const msg: string | null = res.body.instances?.status_msg ?? null;
    if (msg && /: (done|failed: .*|canceled)$/.test(msg)) return msg;
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function rentBusybox(onstart: string): Promise<number> {
  const rented = await api('PUT', `/api/v0/asks/${machineId * 100 + 1}/`, renterKey, { image: BUSYBOX_IMAGE, runtype: 'ssh_proxy', onstart });
  assert.equal(rented.status, 200, JSON.stringify(rented.body));
  const id: number = rented.body.new_contract;
  await within(`instance ${id} running`, untilStatus(server!.url, renterKey, id, 'running'), 120_000);
  return id;
}

before(async () => {
  await prepareAgentRun(docker, dir, dbFile, 600_000_000);
  server = await serve({
    GPUPLANE_DATABASE_URL: `sqlite:${dbFile}`, GPUPLANE_BOOTSTRAP_API_KEY: OWNER, GPUPLANE_SECRET_KEY: 'e2e-secret-key-0123456789',
    GPUPLANE_SIM_MACHINES: '1', GPUPLANE_AGENT_OFFLINE_AFTER: '30', GPUPLANE_GATEWAY: 'false',
  });
  const host = await api('POST', '/_emu/users', OWNER, { email: 'copy-e2e-host@example.com' });
  const renter = await api('POST', '/_emu/users', OWNER, { email: 'copy-e2e-renter@example.com' });
  renterKey = renter.body.api_key;
  agent = startAgent({ url: server.url, stateDir: join(dir, 'state'), hardwareFile: join(dir, 'hardware.json'), ports: PORTS, apiKey: host.body.api_key });
  machineId = (await within('registration', agent.logged('machine registered'))).machine_id;
  const listed = await api('PUT', '/api/v0/machines/create_asks/', host.body.api_key, { machine: machineId, price_gpu: 0.3, price_disk: 0.1, end_date: null });
  assert.equal(listed.status, 200, JSON.stringify(listed.body));
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

test('copy_direct between two busybox instances through the agent\'s tunnel: the files arrive byte for byte; the status says done', { timeout: 300_000 }, async () => {
  const a = await rentBusybox([
    'mkdir -p /workspace/src/deep',
    'echo copied across > /workspace/src/a.txt',
    'head -c 300000 /dev/urandom > /workspace/src/deep/b.bin',
    'ln -s deep/b.bin /workspace/src/latest',
    'touch /workspace/ready',
  ].join('\n'));
  const b = await rentBusybox('true');
  await within('instance A\'s files', (async () => {
    while (!(await inContainer(a, 'test -f /workspace/ready && echo yes')).includes('yes')) await new Promise((r) => setTimeout(r, 200));
  })());

  const res = await api('PUT', '/api/v0/commands/copy_direct/', renterKey, { client_id: 'me', src_id: String(a), dst_id: `C.${b}`, src_path: '/workspace/src/', dst_path: '/workspace/dst/' });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.success, true);
  assert.equal(await within('the copy', copyOutcome(b), 120_000), `copy from instance ${a}:/workspace/src/ to /workspace/dst/: done`);
  const sums = (id: number, d: string) => inContainer(id, `cd ${d} && cat a.txt && sha256sum deep/b.bin && readlink latest`);
  const want = await sums(a, '/workspace/src');
  assert.match(want, /^copied across\n[0-9a-f]{64} {2}deep\/b\.bin\ndeep\/b\.bin\n$/);
  assert.equal(await sums(b, '/workspace/dst'), want);

  // A source path that is not there: the copy fails and says so.
  const missing = await api('PUT', '/api/v0/commands/copy_direct/', renterKey, { client_id: 'me', src_id: String(a), dst_id: String(b), src_path: '/nowhere/', dst_path: '/workspace/x/' });
  assert.equal(missing.status, 200, JSON.stringify(missing.body));
  assert.match(await within('the failed copy', copyOutcome(b), 120_000), new RegExp(`^copy from instance ${a}:/nowhere/ to /workspace/x/: failed: reading the source failed: `));
  assert.equal(await inContainer(b, 'test -e /workspace/x && echo there || echo absent'), 'absent\n');

  const cancel = await api('DELETE', '/api/v0/commands/copy_direct/', renterKey, { client_id: 'me', dst_id: String(b) });
  assert.equal(cancel.status, 200, JSON.stringify(cancel.body));
});
