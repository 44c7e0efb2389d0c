// The agent with the real Docker runtime, as a real process (`gpuplane agent`), against the fake protocol server:
// containers with the right labels, env, limits and ports (published on 127.0.0.1 only), onstart output in the log
// tail, an exit code, stop/start, destroy, and an agent killed and restarted: no duplicate, orphans removed.
// Docker must be running (.ci/run starts it): where it is not, this test fails; it never skips.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { BUSYBOX_IMAGE, buildBusyboxImage, logShows, networksGone } from './helpers/docker.js';
import { desiredInstance, startFakeServer, type FakeServer } from './agent-fake-server.js';

const ROOT = join(import.meta.dirname, '..');
const BIN = join(ROOT, 'bin', 'gpuplane.mjs');
/** Built here from the host's static busybox: no image registry is reachable from CI. */
const IMAGE = BUSYBOX_IMAGE;
const BUSYBOX = '/bin/busybox';
const PORTS = { start: 47000, end: 47199 };

const docker = new Docker();
const dir = mkdtempSync(join(tmpdir(), 'gpuplane-agent-docker-'));
// A machine id of its own: other test runs may share this Docker daemon.
const machineIdBase = 500_000 + randomInt(1_000_000);
let server: FakeServer;
let machineId = 0;

/** Containers of this test's machine, by label, as the agent finds them. */
const ours = () => docker.listContainers({ all: true, filters: { label: [`gpuplane.machine_id=${machineId}`] } });
const oursNetworks = () => docker.listNetworks({ filters: { label: [`gpuplane.machine_id=${machineId}`] } });

interface AgentProcess {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

function startAgentProcess(extra: string[]): AgentProcess {
  const child = spawn(process.execPath, [
    BIN, 'agent', '--url', server.url, '--state-dir', join(dir, 'state'), '--hardware', join(dir, 'hardware.json'),
    '--publish-ip', '127.0.0.1', '--port-range', `${PORTS.start}-${PORTS.end}`, '--heartbeat-interval', '1', '--resync-interval', '2',
    // No disk quota on the test hosts' Docker (overlay2 on ext4): allowed, as an operator would have to.
    '--log-level', 'info', '--allow-unlimited-disk', ...extra,
  ], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, GPUPLANE_API_KEY: '' } });
  let out = '';
  child.stdout!.on('data', (d) => (out += String(d)));
  child.stderr!.on('data', (d) => (out += String(d)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

/** Resolves once none of these containers exists any more (on the daemon's destroy events). */
async function gone(ids: string[]): Promise<void> {
  const events = (await docker.getEvents({ filters: { type: ['container'], event: ['destroy'] } })) as NodeJS.ReadableStream & { destroy(): void };
  const exists = async (id: string) => docker.getContainer(id).inspect().then(() => true, (e: { statusCode?: number }) => {
    if (e.statusCode === 404) return false;
    throw e;
  });
  const left = new Set<string>();
  for (const id of ids) if (await exists(id)) left.add(id);
  await new Promise<void>((resolve) => {
    if (left.size === 0) return resolve();
    events.on('data', (d: Buffer) => {
      for (const line of d.toString().split('\n').filter(Boolean)) left.delete(JSON.parse(line).id);
      if (left.size === 0) resolve();
    });
  });
  events.destroy();
}

const state = (id: number) => (s: { observed: { instance_id: number; state: string }[] }) => s.observed.find((o) => o.instance_id === id)?.state;
const observedOf = (s: { observed: { instance_id: number }[] }, id: number) => s.observed.find((o) => o.instance_id === id) as Record<string, any>;

let agent: AgentProcess | undefined;

before(async () => {
  // Fails here, with Docker's own message, when no daemon answers.
  await docker.ping();
  await buildBusyboxImage(docker, dir, BUSYBOX);
  server = await startFakeServer({ machineIdBase });
  writeFileSync(join(dir, 'hardware.json'), JSON.stringify({
    gpu_name: 'RTX 4090', num_gpus: 2, gpu_ram: 24564, driver_version: '550.54.14', cuda_max_good: 12.4, public_ipaddr: '127.0.0.1',
  }));
});

after(async () => {
  if (agent && agent.child.exitCode === null) {
    agent.child.kill('SIGKILL');
    await agent.exited;
  }
  if (machineId) {
    for (const c of await ours()) await docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => undefined);
    for (const n of await oursNetworks()) await docker.getNetwork(n.Id).remove().catch(() => undefined);
  }
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

const GREETING = 'hello-from-onstart';
const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGpuplanetestkey renter@laptop';
const webInstance = (over: Partial<Parameters<typeof desiredInstance>[0]> = {}) => desiredInstance({
  instance_id: 1, image: IMAGE, runtype: 'ssh', ports: ['22/tcp', '8080/tcp'], ssh_keys: [KEY],
  env: { GREETING, '-p 8080:8080': '1' },
  onstart: 'echo "onstart says $GREETING"\ncat /root/.ssh/authorized_keys\nmkdir -p /www && echo served-by-busybox > /www/index.html\nhttpd -p 8080 -h /www\necho "placed as $CONTAINER_ID at $PUBLIC_IPADDR, ssh on $VAST_TCP_PORT_22, web on $VAST_TCP_PORT_8080"\necho web-ready',
  cpu_share: 0.5, memory_share: 0.05, disk: 5, gpu_indices: [1], ...over,
});
const argsInstance = desiredInstance({ instance_id: 2, image: IMAGE, runtype: 'args', args: ['sh', '-c', 'echo bye from args; exit 3'], gpu_indices: [0], memory_share: 0.05 });

test('the agent runs instances as Docker containers and converges after being killed', async () => {
  agent = startAgentProcess(['--api-key', server.apiKey]);
  server.setDesired([webInstance(), argsInstance]);
  const up = await server.waitForStatus((s) => state(1)(s) === 'running' && state(2)(s) === 'exited');
  machineId = machineIdBase + 1; // the fake server's first machine
  assert.equal((await ours()).length, 2);

  // The container: labels, env without port keys, limits, ports on 127.0.0.1 from the range, as reported.
  const web = observedOf(up, 1);
  const info = await docker.getContainer(web.container_id).inspect();
  const owner = info.Config.Labels['gpuplane.owner'];
  assert.match(owner, /^[0-9a-f]{16}$/);
  assert.equal(info.Name, `/gpuplane-${machineId}-1-${owner}`);
  const reportedSsh = (web.ports as Record<string, { HostPort: string }[]>)['22/tcp'][0].HostPort;
  // SSH's 22/tcp is held by the agent itself (direct-ssh.ts): its labels keep the binding, Docker publishes the rest.
  assert.deepEqual(info.Config.Labels, {
    'gpuplane.machine_id': String(machineId), 'gpuplane.owner': owner, 'gpuplane.instance_id': '1', 'gpuplane.generation': '1',
    'gpuplane.ssh_host_ip': '127.0.0.1', 'gpuplane.ssh_host_port': reportedSsh,
  });
  assert.ok(info.Config.Env.includes(`GREETING=${GREETING}`));
  assert.equal(info.Config.Env.some((e: string) => e.startsWith('-p')), false);
  assert.equal(info.HostConfig.RestartPolicy?.Name, 'no');
  assert.ok((info.HostConfig.Memory ?? 0) > 0 && (info.HostConfig.NanoCpus ?? 0) > 0);
  assert.deepEqual(info.HostConfig.DeviceRequests ?? [], [], 'declared hardware: no NVIDIA runtime to ask');
  const reported = web.ports as Record<string, { HostIp: string; HostPort: string }[]>;
  assert.deepEqual(Object.keys(reported).sort(), ['22/tcp', '8080/tcp']);
  for (const [port, [b]] of Object.entries(reported)) {
    assert.equal(b.HostIp, '127.0.0.1');
    assert.ok(Number(b.HostPort) >= PORTS.start && Number(b.HostPort) <= PORTS.end);
    assert.deepEqual(info.NetworkSettings.Ports[port], port === '22/tcp' ? undefined : [{ HostIp: '127.0.0.1', HostPort: b.HostPort }]);
  }

  // The published port reaches the container (loopback only).
  await logShows(docker, web.container_id, 'web-ready');
  const page = await fetch(`http://127.0.0.1:${reported['8080/tcp'][0].HostPort}/`);
  assert.equal(await page.text(), 'served-by-busybox\n');

  // The log tail of request_logs is the container's real log: onstart's output, the keys it was given.
  const logs = await server.requestLogs(1, 50);
  assert.match(logs.text, new RegExp(`onstart says ${GREETING}\n${KEY}\n`));
  // The container's environment (client-compat-connect): onstart sees its instance id, the host's public address
  // (the hardware file's) and the host port of each published TCP port, as reported.
  assert.match(logs.text, new RegExp(`placed as 1 at 127\\.0\\.0\\.1, ssh on ${reported['22/tcp'][0].HostPort}, web on ${reported['8080/tcp'][0].HostPort}\n`));
  assert.deepEqual(observedOf(up, 2).exit_code, 3);
  assert.equal((await server.requestLogs(2)).text, 'bye from args\n');

  // Stop keeps the container; start runs the same one again (and onstart with it).
  server.setDesired([webInstance({ state: 'stopped' }), argsInstance]);
  const stopped = await server.waitForStatus((s) => state(1)(s) === 'stopped');
  assert.equal(observedOf(stopped, 1).container_id, web.container_id);
  assert.equal((await docker.getContainer(web.container_id).inspect()).State.Running, false);
  server.setDesired([webInstance(), argsInstance]);
  const restarted = await server.waitForStatus((s) => state(1)(s) === 'running' && s.desired_version === server.version);
  assert.equal(observedOf(restarted, 1).container_id, web.container_id);

  // Killed: meanwhile the args instance is destroyed and a stray container of this agent's appears, and one with
  // this machine's id but no owner (made before owner labels, or by hand): that one is not provably ours.
  agent.child.kill('SIGKILL');
  await agent.exited;
  server.setDesired([webInstance()]);
  const stray = await docker.createContainer({
    Image: IMAGE, Cmd: ['sleep', '3600'], Labels: { 'gpuplane.machine_id': String(machineId), 'gpuplane.owner': owner, 'gpuplane.instance_id': '77', 'gpuplane.generation': '1' },
  });
  const unowned = await docker.createContainer({
    Image: IMAGE, Cmd: ['sleep', '3600'], Labels: { 'gpuplane.machine_id': String(machineId), 'gpuplane.instance_id': '78', 'gpuplane.generation': '1' },
  });
  const registrations = server.registrations.length;
  agent = startAgentProcess([]); // no API key: the saved credential is used
  const after = await server.nextStatus((s) => s.observed.length === 1 && state(1)(s) === 'running' && s.desired_version === server.version);
  assert.equal(server.registrations.length, registrations, 'no new registration');
  assert.equal(observedOf(after, 1).container_id, web.container_id, 'the same container, adopted');
  await gone([observedOf(up, 2).container_id, stray.id]);
  const left = await ours();
  assert.deepEqual(left.map((c) => c.Id).sort(), [web.container_id, unowned.id].sort(), 'no duplicate; the destroyed instance and the stray are gone');
  assert.match(agent.output(), /"count":1,.*no owner label/, 'the unowned container is named in a warning');
  await docker.getContainer(unowned.id).remove({ force: true });

  // Destroy: the container goes, with its volumes.
  server.setDesired([]);
  await server.waitForStatus((s) => s.observed.length === 0 && s.desired_version === server.version);
  await gone([web.container_id]);
  assert.deepEqual(await ours(), []);
  // Its network goes too, at the pass after the removal.
  await networksGone(docker, [`gpuplane.machine_id=${machineId}`]);

  agent.child.kill('SIGTERM');
  assert.equal(await agent.exited, 0, agent.output());
  assert.deepEqual(server.violations, []);
});
