// Direct SSH into an image without sshd (issue 31 "Done when": "direct and proxied SSH into an image with sshd and
// into one without (busybox)"). An `ssh_direct` instance of busybox advertises, as the vastai client reads it, the
// host's address and the host port of its 22/tcp (ssh-url takes `ports["22/tcp"]` first); the renter's real `ssh`,
// `scp` and `sftp` there must get a shell, exec and files, as the agent's own SSH server gives them through the
// gateway: before issue 31 such a connection was reset at once. Docker and the OpenSSH client must be there: where
// they are not, this test fails.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { BUSYBOX_IMAGE, logShows } from './helpers/docker.js';
import { call, serve, type Served } from './helpers/spawn.js';
import { prepareAgentRun, startAgent, untilStatus, within as withinDeadline, type AgentProcess } from './helpers/agent-process.js';
import { makeKeyPair, ok, scp, sftp, ssh, untilSshWorks, type SshTarget } from './helpers/openssh.js';

const PORTS = { start: 48400, end: 48499 };
const OWNER = 'gpk_e2e_ssh_direct_bb_owner_key_012';

const docker = new Docker();
const dir = mkdtempSync(join(tmpdir(), 'gpuplane-ssh-direct-busybox-e2e-'));
const dbFile = join(dir, 'gpuplane.db');
let server: Served | undefined;
let agent: AgentProcess | undefined;
let machineId = 0;

const context = () => `--- agent\n${agent?.output().slice(-3000)}\n--- server\n${server?.output().slice(-3000)}`;
const within = <T>(what: string, p: Promise<T>, ms = 60_000) => withinDeadline(what, p, context, ms);
const api = (method: string, path: string, key: string | null, body?: unknown) => call(server!.url, method, path, key, body);
const ours = () => docker.listContainers({ all: true, filters: { label: [`gpuplane.machine_id=${machineId}`] } });

before(async () => {
  await prepareAgentRun(docker, dir, dbFile, 600_000_000);
  server = await serve({
    GPUPLANE_DATABASE_URL: `sqlite:${dbFile}`, GPUPLANE_BOOTSTRAP_API_KEY: OWNER, GPUPLANE_SECRET_KEY: 'e2e-secret-key-0123456789',
    GPUPLANE_SIM_MACHINES: '1', GPUPLANE_AGENT_OFFLINE_AFTER: '30', GPUPLANE_GATEWAY: 'false',
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

test('ssh_direct into busybox (no sshd): ssh, scp and sftp on the advertised 22/tcp', { timeout: 240_000 }, async () => {
  const host = await api('POST', '/_emu/users', OWNER, { email: 'ssh-direct-bb-host@example.com' });
  const renter = await api('POST', '/_emu/users', OWNER, { email: 'ssh-direct-bb-renter@example.com' });
  const [hostKey, renterKey]: string[] = [host.body.api_key, renter.body.api_key];
  const key = await makeKeyPair(dir, 'renter');
  assert.equal((await api('POST', '/api/v0/ssh/', renterKey, { ssh_key: key.publicKey })).status, 200);
  agent = startAgent({ url: server!.url, stateDir: join(dir, 'state'), hardwareFile: join(dir, 'hardware.json'), ports: PORTS, apiKey: hostKey });
  machineId = (await within('registration', agent.logged('machine registered'))).machine_id;
  const listed = await api('PUT', '/api/v0/machines/create_asks/', hostKey, { machine: machineId, price_gpu: 0.3, price_disk: 0.1, end_date: null });
  assert.equal(listed.status, 200, JSON.stringify(listed.body));
  const rented = await api('PUT', `/api/v0/asks/${machineId * 100 + 1}/`, renterKey, { image: BUSYBOX_IMAGE, runtype: 'ssh_direct', onstart: 'mkdir -p /workspace && echo "onstart done"' });
  assert.equal(rented.status, 200, JSON.stringify(rented.body));
  const id: number = rented.body.new_contract;
  const view = await within('running', untilStatus(server!.url, renterKey, id, 'running'), 120_000);
  const [container] = await ours();
  await within('onstart', logShows(docker, container.Id, 'onstart done'));

  // Where the vastai client's ssh-url goes for a direct instance: public_ipaddr and the host port of 22/tcp.
  const port = Number(view.ports['22/tcp'][0].HostPort);
  assert.deepEqual([view.ssh_host, view.ssh_port], ['127.0.0.1', port]);
  const t: SshTarget = { host: view.public_ipaddr, port, key, knownHosts: join(dir, 'known_hosts') };
  await untilSshWorks(t, 'true', 60_000, context);
  assert.equal((await ok(ssh(t, 'id -u; ls -d /workspace'), 'exec')).trim(), '0\n/workspace');
  assert.equal((await ssh(t, 'exit 4')).code, 4);
  const blob = randomBytes(1024 * 1024);
  writeFileSync(join(dir, 'b.bin'), blob);
  await ok(scp(t, join(dir, 'b.bin'), ':/workspace/b.bin'), 'scp up');
  assert.equal((await ok(ssh(t, 'sha256sum /workspace/b.bin'), 'sum')).split(' ')[0], createHash('sha256').update(blob).digest('hex'));
  await ok(sftp(t, `get /workspace/b.bin ${join(dir, 'b-back.bin')}`), 'sftp get');
  assert.ok(readFileSync(join(dir, 'b-back.bin')).equals(blob));
  assert.equal((await api('DELETE', `/api/v0/instances/${id}/`, renterKey)).status, 200);
});
