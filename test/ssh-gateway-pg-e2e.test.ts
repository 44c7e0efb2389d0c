// Two server processes on one PostgreSQL database (issue 31 "Done when"): a real agent holds its tunnel to process A;
// the renter uses process B only (its API, its gateway on another address, 127.0.0.2), and still gets in with the
// real OpenSSH client (ssh, scp) and `vastai copy`'s rsync: B opens each stream through a hop to A, the holder of the
// tunnel (agent_tunnels names A). Then A is killed and started again on its port: the agent's tunnel comes back and
// the renter, still on B, gets in again, with the same host key, and finds their files. PostgreSQL, Docker and the
// OpenSSH client must be there: where they are not, this test fails.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import pg from 'pg';
import { BUSYBOX_IMAGE, buildBusyboxImage, logShows } from './helpers/docker.js';
import { call, freshPgDatabase, serve, type Served } from './helpers/spawn.js';
import { startAgent, untilStatus, within as withinDeadline, type AgentProcess } from './helpers/agent-process.js';
import { makeKeyPair, ok, run, scp, ssh, untilSshWorks, type KeyPair, type SshTarget } from './helpers/openssh.js';

const PORTS = { start: 48900, end: 48999 };
const GATEWAY_PORTS = '53000-53899';
const OWNER = 'gpk_e2e_ssh_gateway_pg_owner_01234';

const docker = new Docker();
const dir = mkdtempSync(join(tmpdir(), 'gpuplane-ssh-gateway-pg-e2e-'));
let db: Awaited<ReturnType<typeof freshPgDatabase>> | undefined;
let a: Served | undefined;
let b: Served | undefined;
let agent: AgentProcess | undefined;
const instanceIds: number[] = [];

const context = () => `--- agent\n${agent?.output().slice(-3000)}\n--- A\n${a?.output().slice(-3000)}\n--- B\n${b?.output().slice(-3000)}`;
const within = <T>(what: string, p: Promise<T>, ms = 60_000) => withinDeadline(what, p, context, ms);
/** A process's environment: the same database and secret; its own gateway address. */
const env = (gatewayAddress: string) => ({
  GPUPLANE_DATABASE_URL: db!.url, GPUPLANE_BOOTSTRAP_API_KEY: OWNER, GPUPLANE_SECRET_KEY: 'e2e-secret-key-0123456789',
  GPUPLANE_SIM_MACHINES: '1', GPUPLANE_AGENT_OFFLINE_AFTER: '30',
  GPUPLANE_GATEWAY: 'true', GPUPLANE_GATEWAY_BIND: gatewayAddress, GPUPLANE_GATEWAY_HOST: gatewayAddress, GPUPLANE_GATEWAY_PORTS: GATEWAY_PORTS,
  // Every connection here comes from 127.0.0.1, refused keys included on purpose: the failed-login block (its own
  // test is gateway-ssh's) must not shut this file's later steps out.
  GPUPLANE_GATEWAY_FAILED_LOGINS: '1000',
});
const ours = () => Promise.all(instanceIds.map((id) => docker.listContainers({ all: true, filters: { label: [`gpuplane.instance_id=${id}`] } }))).then((l) => l.flat());
const sha256 = (x: Buffer) => createHash('sha256').update(x).digest('hex');

/** The `host:port` of the hop URL of the process holding the machine's tunnel (agent_tunnels), if any. */
async function tunnelHolder(machineId: number): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: db!.url });
  await client.connect();
  try {
    const r = await client.query('SELECT hop_url FROM agent_tunnels WHERE machine_id = $1', [machineId]);
    return r.rows[0] ? new URL(r.rows[0].hop_url).host : undefined;
  } finally {
    await client.end();
  }
}

before(async () => {
  await docker.ping();
  await buildBusyboxImage(docker, dir);
  writeFileSync(join(dir, 'hardware.json'), JSON.stringify({
    gpu_name: 'RTX 4090', num_gpus: 2, gpu_ram: 24564, driver_version: '550.54.14', cuda_max_good: 12.4, public_ipaddr: '127.0.0.1',
  }));
  db = await freshPgDatabase();
  a = await serve(env('127.0.0.1'));
  b = await serve(env('127.0.0.2'));
});

after(async () => {
  if (agent && agent.child.exitCode === null) {
    agent.child.kill('SIGKILL');
    await agent.exited;
  }
  for (const c of await ours()) await docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => undefined);
  for (const id of instanceIds) for (const n of await docker.listNetworks({ filters: { label: [`gpuplane.instance_id=${id}`] } })) await docker.getNetwork(n.Id).remove().catch(() => undefined);
  await a?.stop();
  await b?.stop();
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

test('PostgreSQL, two processes: the renter on the one not holding the tunnel gets in (ssh, scp, vastai copy), and again after the holder restarts', { timeout: 420_000 }, async () => {
  const host = await call(a!.url, 'POST', '/_emu/users', OWNER, { email: 'pg-gw-host@example.com' });
  const renter = await call(b!.url, 'POST', '/_emu/users', OWNER, { email: 'pg-gw-renter@example.com' });
  const [hostKey, renterKey]: string[] = [host.body.api_key, renter.body.api_key];
  const key: KeyPair = await makeKeyPair(dir, 'renter');
  assert.equal((await call(b!.url, 'POST', '/api/v0/ssh/', renterKey, { ssh_key: key.publicKey })).status, 200);

  agent = startAgent({ url: a!.url, stateDir: join(dir, 'state'), hardwareFile: join(dir, 'hardware.json'), ports: PORTS, apiKey: hostKey });
  const machineId: number = (await within('registration', agent.logged('machine registered'))).machine_id;
  const listed = await call(a!.url, 'PUT', '/api/v0/machines/create_asks/', hostKey, { machine: machineId, price_gpu: 0.3, price_disk: 0.1, end_date: null });
  assert.equal(listed.status, 200, JSON.stringify(listed.body));

  // Everything the renter does goes to B.
  const rented = await call(b!.url, 'PUT', `/api/v0/asks/${machineId * 100 + 1}/`, renterKey, {
    image: BUSYBOX_IMAGE, runtype: 'ssh_proxy', onstart: 'mkdir -p /workspace && echo "onstart done"',
  });
  assert.equal(rented.status, 200, JSON.stringify(rented.body));
  const id: number = rented.body.new_contract;
  instanceIds.push(id);
  const view = await within('running', untilStatus(b!.url, renterKey, id, 'running'), 120_000);
  assert.equal(view.ssh_host, '127.0.0.2', "B's gateway address");
  const [container] = await ours();
  await within('onstart', logShows(docker, container.Id, 'onstart done'));
  assert.equal(await tunnelHolder(machineId), new URL(a!.url).host, 'A holds the tunnel: B must hop to it');

  const knownHosts = join(dir, 'known_hosts');
  const t: SshTarget = { host: view.ssh_host, port: view.ssh_port, key, knownHosts };
  await untilSshWorks(t, 'true', 60_000, context);
  assert.equal((await ok(ssh(t, 'echo "$((6*7))"'), 'ssh via B')).trim(), '42');
  const blob = randomBytes(4 * 1024 * 1024);
  writeFileSync(join(dir, 'blob.bin'), blob);
  await ok(scp(t, join(dir, 'blob.bin'), ':/workspace/blob.bin'), 'scp via B');
  assert.equal((await ok(ssh(t, 'sha256sum /workspace/blob.bin'), 'sum')).split(' ')[0], sha256(blob));

  // vastai copy, asked of B, the client's rsync to B's gateway.
  mkdirSync(join(dir, 'up'));
  writeFileSync(join(dir, 'up', 'c.txt'), 'copied through a hop\n');
  const put = await call(b!.url, 'PUT', '/api/v0/commands/rsync/', renterKey, { client_id: 'me', src_id: null, dst_id: String(id), src_path: `${join(dir, 'up')}/`, dst_path: '/workspace/in/' });
  assert.equal(put.status, 200, JSON.stringify(put.body));
  assert.equal(put.body.dst_addr, '127.0.0.2');
  const cmd = `rsync -arz -v --progress --rsh=ssh -e 'ssh -i ${key.file} -p ${put.body.dst_port} -o StrictHostKeyChecking=no -o UserKnownHostsFile=${join(dir, 'copy_known_hosts')} -F /dev/null' ${join(dir, 'up')}/ vastai_kaalia@${put.body.dst_addr}::${id}//workspace/in/`;
  await ok(run('sh', ['-c', cmd], { timeoutMs: 120_000 }), cmd);
  assert.equal(await ok(ssh(t, 'cat /workspace/in/c.txt'), 'read'), 'copied through a hop\n');

  // A, the holder, killed and started again on its port: the agent's tunnel returns; B's renter gets in again, same
  // host key (known_hosts would refuse a changed one), files kept.
  const port = Number(new URL(a!.url).port);
  await a!.kill('SIGKILL');
  a = await serve(env('127.0.0.1'), { port });
  await untilSshWorks(t, 'sha256sum /workspace/blob.bin', 90_000, context);
  assert.equal((await ok(ssh(t, 'sha256sum /workspace/blob.bin'), 'sum')).split(' ')[0], sha256(blob));
  assert.equal(await tunnelHolder(machineId), new URL(a.url).host);
  assert.equal(readFileSync(knownHosts, 'utf8').trim().split('\n').length, 1, 'one host key, the same throughout');

  assert.equal((await call(b!.url, 'DELETE', `/api/v0/instances/${id}/`, renterKey)).status, 200);
  assert.doesNotMatch(agent.output() + a.output() + b!.output(), new RegExp(key.publicKey.split(' ')[1].slice(0, 40).replace(/[+/]/g, '.')), 'no key in a log');
});
