// End to end with real processes: `gpuplane serve`, `gpuplane agent` with the Docker runtime and declared hardware,
// and HTTP calls as the host and as a renter. The host's machine is listed, found in search and rented; the container
// runs and request_logs shows its onstart output; stop, start, destroy; the agent is killed (instances offline) and
// restarted (running again, no duplicate container); the server is restarted mid-way and the states converge.
// Container ports are published on 127.0.0.1 only. Docker must be running: where it is not, this test fails.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { BUSYBOX_IMAGE, logShows } from './helpers/docker.js';
import { call, serve, type Served } from './helpers/spawn.js';
import { prepareAgentRun, startAgent, untilStatus, within as withinDeadline, type AgentProcess } from './helpers/agent-process.js';

const IMAGE = BUSYBOX_IMAGE;
const PORTS = { start: 48000, end: 48199 };
const OWNER = 'gpk_e2e_owner_key_0123456789abcdef';

const docker = new Docker();
const dir = mkdtempSync(join(tmpdir(), 'gpuplane-agent-e2e-'));
const dbFile = join(dir, 'gpuplane.db');
let server: Served | undefined;
let port = 0;
let agent: AgentProcess | undefined;
let machineId = 0;

/**
 * A free port for the server, kept across its restart: below the ephemeral range (32768-60999 on Linux), so that no
 * outgoing connection (the agent's, retrying while the server is down) can be given it meanwhile.
 */
async function freePort(): Promise<number> {
  for (;;) {
    const candidate = 20_000 + randomInt(10_000);
    const s = createServer();
    const ok = await new Promise<boolean>((resolve) => {
      s.once('error', () => resolve(false));
      s.listen(candidate, '127.0.0.1', () => resolve(true));
    });
    if (ok) {
      await new Promise<void>((resolve) => s.close(() => resolve()));
      return candidate;
    }
  }
}

const startServer = () => serve({
  GPUPLANE_DATABASE_URL: `sqlite:${dbFile}`, GPUPLANE_BOOTSTRAP_API_KEY: OWNER, GPUPLANE_SECRET_KEY: 'e2e-secret-key-0123456789',
  GPUPLANE_SIM_MACHINES: '3', GPUPLANE_AGENT_OFFLINE_AFTER: '3', GPUPLANE_SIM_BOOT_SECONDS: '1',
}, { port });

const agentAt = (apiKey: string) => startAgent({
  url: `http://127.0.0.1:${port}`, stateDir: join(dir, 'state'), hardwareFile: join(dir, 'hardware.json'), ports: PORTS, apiKey,
});

/** A step's deadline, failing with the processes' recent output. */
const within = <T>(what: string, p: Promise<T>, ms = 45_000) =>
  withinDeadline(what, p, () => `--- agent\n${agent?.output().slice(-3000)}\n--- server\n${server?.output().slice(-3000)}`, ms);

const api = (method: string, path: string, key: string | null, body?: unknown) => call(`http://127.0.0.1:${port}`, method, path, key, body);

const until = (key: string, id: number, status: string | null) => untilStatus(`http://127.0.0.1:${port}`, key, id, status);

/** The first line a server on the port sends (an SSH server's identification), retried while nothing listens yet. */
async function sshBanner(port: number): Promise<string> {
  for (;;) {
    const line = await new Promise<string | null>((resolve) => {
      const s = connect(port, '127.0.0.1');
      let got = '';
      s.on('data', (d) => {
        got += String(d);
        if (got.includes('\n')) {
          s.destroy();
          resolve(got.split('\n')[0]);
        }
      });
      s.on('error', () => resolve(null));
      s.on('close', () => resolve(got ? got : null));
    });
    if (line) return line;
    await new Promise((r) => setTimeout(r, 200));
  }
}

const ours = () => docker.listContainers({ all: true, filters: { label: [`gpuplane.machine_id=${machineId}`] } });

/** Resolves once the container is no longer running (`not-running`) or is gone (`removed`): Docker's own wait. */
function dockerWait(containerId: string, condition: 'not-running' | 'removed'): Promise<unknown> {
  return docker.getContainer(containerId).wait({ condition });
}

before(async () => {
  await prepareAgentRun(docker, dir, dbFile, 1_000_000);
  port = await freePort();
  server = await startServer();
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

// Its own timeout, under the runner's per-file one, so that a hang fails the test and after() still ends the processes.
test('a real host: register, list, rent, logs, stop/start, agent and server restarts, destroy', { timeout: 110_000 }, async () => {
  const host = await api('POST', '/_emu/users', OWNER, { email: 'host@example.com' });
  const renter = await api('POST', '/_emu/users', OWNER, { email: 'renter@example.com' });
  assert.equal(host.status, 200);
  const hostKey: string = host.body.api_key;
  const renterKey: string = renter.body.api_key;

  // The agent registers the machine under the host's key.
  agent = agentAt(hostKey);
  machineId = (await within('registration', agent.logged('machine registered'))).machine_id;
  assert.ok(machineId > 1_000_000);

  // Not for rent until the host lists it.
  const query = { machine_id: { eq: machineId }, verified: { eq: false }, rentable: { eq: true } };
  assert.deepEqual((await api('POST', '/api/v0/bundles/', renterKey, query)).body.offers, []);
  const listed = await api('PUT', '/api/v0/machines/create_asks/', hostKey, { machine: machineId, price_gpu: 0.3, price_disk: 0.1, end_date: null });
  assert.equal(listed.status, 200, JSON.stringify(listed.body));
  const offers = (await api('POST', '/api/v0/bundles/', renterKey, query)).body.offers;
  const offer = offers.find((o: any) => o.num_gpus === 1);
  assert.ok(offer, JSON.stringify(offers));
  assert.equal(offer.verified, false, 'declared hardware is never verified');

  // The renter rents it; the container runs with its onstart.
  const rented = await api('PUT', `/api/v0/asks/${offer.id}/`, renterKey, {
    image: IMAGE, runtype: 'ssh_direc ssh_proxy', env: { GREETING: 'hi-e2e' }, onstart: 'echo "onstart says $GREETING"',
  });
  assert.equal(rented.status, 200, JSON.stringify(rented.body));
  const id: number = rented.body.new_contract;
  const running = await within('instance running', until(renterKey, id, 'running'));
  const [binding] = running.ports['22/tcp'];
  assert.equal(binding.HostIp, '127.0.0.1');
  assert.ok(Number(binding.HostPort) >= PORTS.start && Number(binding.HostPort) <= PORTS.end);
  assert.equal(running.ssh_port, Number(binding.HostPort));
  assert.equal(running.public_ipaddr, '127.0.0.1');
  const [container] = await ours();
  assert.equal(container.Names[0], `/gpuplane-${machineId}-${id}-${container.Labels['gpuplane.owner']}`);
  // SSH's 22/tcp is the agent's to hold, not Docker's (direct-ssh.ts): the labels keep the binding, and what answers
  // there is an SSH server (busybox has no sshd: the agent's own).
  const inspected = await docker.getContainer(container.Id).inspect();
  assert.equal(inspected.NetworkSettings.Ports['22/tcp'], undefined);
  assert.deepEqual([inspected.Config.Labels['gpuplane.ssh_host_ip'], inspected.Config.Labels['gpuplane.ssh_host_port']], [binding.HostIp, binding.HostPort]);
  assert.match(await within('an SSH server on the direct port', sshBanner(Number(binding.HostPort))), /^SSH-2\.0-/);

  // request_logs: the container's real log, with onstart's output (once the container has written it).
  await within('onstart output', logShows(docker, container.Id, 'onstart says hi-e2e'));
  const logs = await api('PUT', `/api/v0/instances/request_logs/${id}/`, renterKey, { tail: '100' });
  assert.equal(logs.status, 200);
  const fetched = await fetch(logs.body.result_url);
  assert.equal(fetched.status, 200);
  assert.match(await fetched.text(), /onstart says hi-e2e\n/);

  // Stop keeps the container; start runs the same one.
  const stoppedEvent = dockerWait(container.Id, 'not-running');
  assert.equal((await api('PUT', `/api/v0/instances/${id}/`, renterKey, { state: 'stopped' })).status, 200);
  await within('container stopped', stoppedEvent);
  assert.equal((await docker.getContainer(container.Id).inspect()).State.Running, false);
  assert.equal((await api('PUT', `/api/v0/instances/${id}/`, renterKey, { state: 'running' })).status, 200);
  await within('instance running', until(renterKey, id, 'running'));
  assert.deepEqual((await ours()).map((c) => c.Id), [container.Id]);

  // The agent is killed: the machine goes silent and the instance offline; restarted, it is running again, same container.
  agent.child.kill('SIGKILL');
  await agent.exited;
  await within('instance offline', until(renterKey, id, 'offline'));
  agent = agentAt('');
  await within('instance running', until(renterKey, id, 'running'));
  assert.deepEqual((await ours()).map((c) => c.Id), [container.Id], 'no duplicate container');

  // The server is restarted: the states converge (running, the same single container).
  await server!.stop();
  server = await startServer();
  const after = await within('instance running', until(renterKey, id, 'running'));
  assert.equal(after.ports['22/tcp'][0].HostPort, binding.HostPort);
  assert.deepEqual((await ours()).map((c) => c.Id), [container.Id]);

  // Destroy: the container is removed.
  const destroyed = dockerWait(container.Id, 'removed');
  assert.equal((await api('DELETE', `/api/v0/instances/${id}/`, renterKey)).status, 200);
  await within('container removed', destroyed);
  assert.deepEqual(await ours(), []);

  agent.child.kill('SIGTERM');
  assert.equal(await agent.exited, 0, agent.output());
  assert.doesNotMatch(agent.output(), new RegExp(hostKey), 'the API key is never logged');
  assert.doesNotMatch(server!.output(), new RegExp(hostKey));
});
