// Threats on a GPU host shared by renters and by control planes (issue 29 items 6, 13 and 14), with the real agent
// (`gpuplane agent`, Docker runtime) against two fake protocol servers: a second control plane's agent on the same
// Docker daemon (its machine numbered alike) removing this one's containers; one renter's container reaching
// another's unpublished port, or a service listening on the host itself; a container keeping NET_RAW and MKNOD or
// gaining privileges; a fork bomb taking the host's pid space; a log flood filling the host's disk.
// Docker must be running (.ci/run starts it): where it is not, this test fails; it never skips.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { statSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { demuxDockerLog } from '../src/agent/docker-log.js';
import { storageSizeSupported } from '../src/agent/docker-runtime.js';
import { ensureHostFirewall, HOST_FIREWALL_RULE } from '../src/agent/host-firewall.js';
import type { Exec } from '../src/agent/hardware.js';
import { BUSYBOX_IMAGE, buildBusyboxImage, logShows, networksGone } from './helpers/docker.js';
import { startAgent, within as withinDeadline, type AgentProcess } from './helpers/agent-process.js';
import { desiredInstance, startFakeServer, type FakeServer } from './agent-fake-server.js';

const IMAGE = BUSYBOX_IMAGE;
const docker = new Docker();
const dir = mkdtempSync(join(tmpdir(), 'gpuplane-agent-isolation-'));
// One machine id for both servers (each fresh server numbers its machines alike), and none other test runs share.
const machineIdBase = 2_000_000 + randomInt(1_000_000);
const machineId = machineIdBase + 1;
/** The pids limit agent A runs with: low, so the fork bomb below meets it at once. */
const PIDS_LIMIT = 64;
/** Agent A's log rotation: 1 MiB files, two of them. */
const LOG_MAX_MB = 1;
/** Seconds a probe waits for a connection: a dropped SYN is never answered, so this bounds each refused probe. */
const PROBE_TIMEOUT_S = 3;

let serverA: FakeServer;
let serverB: FakeServer;
let agentA: AgentProcess | undefined;
let agentB: AgentProcess | undefined;
let hostService: Server;
let hostPort = 0;

const byMachine = [`gpuplane.machine_id=${machineId}`];
const containersOfMachine = () => docker.listContainers({ all: true, filters: { label: byMachine } });

const within = <T>(what: string, p: Promise<T>, ms = 60_000) =>
  withinDeadline(what, p, () => `--- agent A\n${agentA?.output().slice(-3000)}\n--- agent B\n${agentB?.output().slice(-3000)}`, ms);

type Status = { observed: { instance_id: number; state: string; container_id: string | null; ports: Record<string, { HostPort: string }[]> }[] };
const observedOf = (s: Status, id: number) => s.observed.find((o) => o.instance_id === id)!;
const allRunning = (ids: number[]) => (s: Status) => ids.every((id) => s.observed.find((o) => o.instance_id === id)?.state === 'running');

/** Runs argv in a container (Docker's exec); its exit status and what it printed. */
async function execIn(containerId: string, argv: string[]): Promise<{ code: number | null; out: string }> {
  const e = await docker.getContainer(containerId).exec({ Cmd: argv, AttachStdout: true, AttachStderr: true });
  const stream = (await e.start({ hijack: true, stdin: false })) as unknown as NodeJS.ReadableStream;
  const chunks: Buffer[] = [];
  await new Promise<void>((resolve, reject) => {
    stream.on('data', (d: Buffer) => chunks.push(d));
    stream.once('end', resolve);
    stream.once('close', resolve);
    stream.once('error', reject);
  });
  return { code: (await e.inspect()).ExitCode ?? null, out: demuxDockerLog(Buffer.concat(chunks)) };
}

/** An HTTP GET with busybox's `nc` (its `wget` crashes in this static build): the body, or null when no connection. */
const httpGet = (host: string, port: number) =>
  ['sh', '-c', `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w ${PROBE_TIMEOUT_S} ${host} ${port}`];
const bodyOf = (reply: string) => (/^HTTP\/1\.[01] 200 /.test(reply) ? reply.slice(reply.indexOf('\r\n\r\n') + 4) : null);

/** A GET from inside a container: the page, or null when no connection was made within PROBE_TIMEOUT_S. */
async function fetchFrom(containerId: string, host: string, port: number): Promise<string | null> {
  return bodyOf((await execIn(containerId, httpGet(host, port))).out);
}

/** A renter's web container: its page on 8080 (published) and on 9000 (not published). */
const web = (instanceId: number, secret: string) => desiredInstance({
  instance_id: instanceId, image: IMAGE, runtype: 'ssh', ports: ['8080/tcp'], gpu_indices: [], memory_share: 0.02, cpu_share: 0.1,
  onstart: `mkdir -p /www && echo ${secret} > /www/index.html\nhttpd -p 8080 -h /www\nhttpd -p 9000 -h /www\necho web-ready`,
});
/** Forks until it cannot (each `sleep` stays), then says so and waits without forking again. */
const forkBomb = desiredInstance({
  instance_id: 3, image: IMAGE, runtype: 'ssh', gpu_indices: [], memory_share: 0.02, cpu_share: 0.1,
  onstart: 'i=0; while [ $i -lt 500 ]; do (sleep 600 &) 2>/dev/null || true; i=$((i+1)); done; echo forks-done; exec sleep 3600',
});
/** Writes about 6 MB to its log, then says so. */
const logFlood = desiredInstance({
  instance_id: 4, image: IMAGE, runtype: 'ssh', gpu_indices: [], memory_share: 0.02, cpu_share: 0.5,
  onstart: 'yes "flood line, padded to about a hundred characters with this text and some more of it to get there" | head -n 60000; echo flood-done',
});

before(async () => {
  await docker.ping();
  await buildBusyboxImage(docker, dir);
  writeFileSync(join(dir, 'hardware.json'), JSON.stringify({
    gpu_name: 'RTX 4090', num_gpus: 2, gpu_ram: 24564, driver_version: '550.54.14', cuda_max_good: 12.4, public_ipaddr: '127.0.0.1',
  }));
  serverA = await startFakeServer({ machineIdBase });
  serverB = await startFakeServer({ machineIdBase });
  // The host firewall rule is the agent's to put in place: taken out first (an earlier run leaves it), so this run
  // sees the agents put it back.
  while (spawnSync('iptables', ['-w', '-D', 'INPUT', ...HOST_FIREWALL_RULE]).status === 0);
  hostService = createServer((_req, res) => res.end('host-secret\n'));
  await new Promise<void>((resolve) => hostService.listen(0, '0.0.0.0', resolve));
  hostPort = (hostService.address() as AddressInfo).port;
});

after(async () => {
  for (const a of [agentA, agentB]) {
    if (a && a.child.exitCode === null) {
      a.child.kill('SIGKILL');
      await a.exited;
    }
  }
  for (const c of await containersOfMachine()) await docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => undefined);
  for (const n of await docker.listNetworks({ filters: { label: byMachine } })) await docker.getNetwork(n.Id).remove().catch(() => undefined);
  await serverA?.close();
  await serverB?.close();
  await new Promise<void>((resolve) => (hostService ? hostService.close(() => resolve()) : resolve()));
  rmSync(dir, { recursive: true, force: true });
});

test('the host firewall rule: inserted first in INPUT when missing, left as it is when present, a failure said', async () => {
  const calls: string[][] = [];
  const exec = (answers: Record<string, { code: number | null; notFound?: boolean; stderr?: string }>): Exec => async (file, args) => {
    calls.push([file, ...args]);
    const a = answers[`${file} ${args[1]}`] ?? { code: 0 };
    return { stdout: '', stderr: a.stderr ?? '', code: a.code, notFound: a.notFound ?? false };
  };
  const missing = await ensureHostFirewall(exec({ 'iptables -C': { code: 1 }, 'ip6tables -C': { code: 1 } }));
  assert.deepEqual(missing.map((o) => [o.tool, o.result]), [['iptables', 'installed'], ['ip6tables', 'installed']]);
  assert.deepEqual(calls[1], ['iptables', '-w', '-I', 'INPUT', '1', ...HOST_FIREWALL_RULE]);
  assert.deepEqual(HOST_FIREWALL_RULE.slice(0, 7), ['-i', 'gpb+', '-m', 'conntrack', '!', '--ctstate', 'ESTABLISHED,RELATED']);
  assert.equal(HOST_FIREWALL_RULE.at(-1), 'DROP');
  calls.length = 0;
  const present = await ensureHostFirewall(exec({}));
  assert.deepEqual(present.map((o) => o.result), ['present', 'present']);
  assert.equal(calls.some((c) => c.includes('-I')), false);
  const denied = await ensureHostFirewall(exec({ 'iptables -C': { code: 4, stderr: 'Permission denied (you must be root)\n' }, 'ip6tables -C': { code: null, notFound: true } }));
  assert.deepEqual(denied.map((o) => [o.result, o.detail]), [['failed', 'Permission denied (you must be root)'], ['failed', 'ip6tables was not found on PATH']]);
});

/**
 * Agents A and B running their renters' instances (A: two web pages, the fork bomb, the log flood; B: one web page),
 * started by the first test that asks. The two tests below both read them, so either runs alone.
 */
let running: Promise<{ upA: Status; upB: Status }> | undefined;
const agentsRunning = () => (running ??= (async () => {
  agentA = startAgent({
    url: serverA.url, stateDir: join(dir, 'state-a'), hardwareFile: join(dir, 'hardware.json'), ports: { start: 47200, end: 47299 }, apiKey: serverA.apiKey,
    extra: ['--heartbeat-interval', '1', '--pids-limit', String(PIDS_LIMIT), '--log-max-size', String(LOG_MAX_MB), '--log-max-files', '2'],
  });
  agentB = startAgent({
    url: serverB.url, stateDir: join(dir, 'state-b'), hardwareFile: join(dir, 'hardware.json'), ports: { start: 47300, end: 47399 }, apiKey: serverB.apiKey,
    extra: ['--heartbeat-interval', '1'],
  });
  serverA.setDesired([web(1, 'secret-of-a1'), web(2, 'secret-of-a2'), forkBomb, logFlood]);
  serverB.setDesired([web(1, 'secret-of-b1')]);
  const upA = await within('agent A running', serverA.waitForStatus(allRunning([1, 2, 3, 4]))) as Status;
  const upB = await within('agent B running', serverB.waitForStatus(allRunning([1]))) as Status;
  return { upA, upB };
})());

test('two renters on one host: no route to each other\'s unpublished ports or to the host\'s services; capabilities, pids and logs limited', { timeout: 300_000 }, async (t) => {
  const { upA, upB } = await agentsRunning();
  const [a1, a2, a3, a4] = [1, 2, 3, 4].map((id) => observedOf(upA, id).container_id!);
  const b1 = observedOf(upB, 1).container_id!;
  for (const id of [a1, a2, b1]) await within('web ready', logShows(docker, id, 'web-ready'));
  const [ia1, ia2, ib1] = await Promise.all([a1, a2, b1].map((id) => docker.getContainer(id).inspect()));

  // Each instance on a network of its own.
  const netOf = (i: Docker.ContainerInspectInfo) => Object.entries(i.NetworkSettings.Networks);
  for (const i of [ia1, ia2, ib1]) {
    assert.equal(netOf(i).length, 1);
    assert.equal(netOf(i)[0][0], i.HostConfig.NetworkMode);
  }
  assert.equal(new Set([ia1, ia2, ib1].map((i) => i.HostConfig.NetworkMode)).size, 3);
  const ipOf = (i: Docker.ContainerInspectInfo) => netOf(i)[0][1].IPAddress;

  // The page is there (each container reaches its own unpublished port), and a published port works from loopback.
  assert.equal(await fetchFrom(a1, '127.0.0.1', 9000), 'secret-of-a1\n');
  const published = observedOf(upA, 1).ports['8080/tcp'][0].HostPort;
  assert.equal(await (await fetch(`http://127.0.0.1:${published}/`)).text(), 'secret-of-a1\n');

  // Another renter's unpublished port: of the same server's machine, and of another control plane's, no connection.
  assert.equal(await fetchFrom(a2, ipOf(ia1), 9000), null);
  assert.equal(await fetchFrom(a2, ipOf(ib1), 9000), null);
  assert.equal(await fetchFrom(b1, ipOf(ia1), 9000), null);

  // The agents put the host firewall rule back (docs/HOST-SECURITY.md). Which one did is not asserted: another test
  // file's agent on this host may have been first.
  assert.equal(spawnSync('iptables', ['-w', '-C', 'INPUT', ...HOST_FIREWALL_RULE]).status, 0, 'the rule is in INPUT');
  assert.doesNotMatch(`${agentA!.output()}${agentB!.output()}`, /cannot install the host firewall rule/);

  // A service on the host's 0.0.0.0: answers a plain container on Docker's default bridge, but no instance, through
  // its network's gateway or docker0's address.
  // A plain container on Docker's default bridge (where renters' containers were before) reaches it through docker0.
  const plain = await docker.createContainer({ Image: IMAGE, Cmd: ['sleep', '600'] });
  t.after(() => plain.remove({ force: true }));
  await plain.start();
  const docker0 = (await plain.inspect()).NetworkSettings.Networks.bridge.Gateway;
  assert.equal(await fetchFrom(plain.id, docker0, hostPort), 'host-secret\n');
  assert.equal(await fetchFrom(a2, netOf(ia2)[0][1].Gateway, hostPort), null);
  assert.equal(await fetchFrom(a2, docker0, hostPort), null);

  // Capabilities: all dropped but the kept ones; no-new-privileges; as Docker reports them.
  for (const i of [ia1, ia2, ib1]) {
    assert.deepEqual(i.HostConfig.CapDrop, ['ALL']);
    assert.deepEqual(i.HostConfig.CapAdd, ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'SETUID', 'SETGID', 'SYS_CHROOT', 'KILL', 'NET_BIND_SERVICE']);
    assert.deepEqual(i.HostConfig.SecurityOpt, ['no-new-privileges']);
  }
  // And as the container's processes hold them: no NET_RAW (bit 13), no MKNOD (bit 27).
  const capEff = /CapEff:\s*([0-9a-f]+)/.exec((await execIn(a2, ['cat', '/proc/self/status'])).out)![1];
  assert.equal(BigInt(`0x${capEff}`) & ((1n << 13n) | (1n << 27n)), 0n);
  assert.match((await execIn(a2, ['cat', '/proc/self/status'])).out, /NoNewPrivs:\s*1/);

  // The fork bomb meets the pids limit; counted from the host (docker top), as the container cannot fork any more.
  await within('fork bomb done', logShows(docker, a3, 'forks-done'));
  assert.equal((await docker.getContainer(a3).inspect()).HostConfig.PidsLimit, PIDS_LIMIT);
  const processes = (await docker.getContainer(a3).top()).Processes.length;
  assert.ok(processes <= PIDS_LIMIT && processes >= PIDS_LIMIT / 2, `${processes} processes`);

  // The log flood rotates: the current file stays under its size, one rotated file is kept.
  // (Six megabytes through Docker's log driver: under a full CI run's load this took more than the usual minute.)
  await within('log flood done', logShows(docker, a4, 'flood-done'), 180_000);
  const i4 = await docker.getContainer(a4).inspect();
  assert.deepEqual(i4.HostConfig.LogConfig, { Type: 'json-file', Config: { 'max-size': `${LOG_MAX_MB}m`, 'max-file': '2' } });
  assert.ok(statSync(i4.LogPath).size <= LOG_MAX_MB * 1024 * 1024 * 1.1, `${statSync(i4.LogPath).size} bytes`);
  assert.ok(existsSync(`${i4.LogPath}.1`) && !existsSync(`${i4.LogPath}.2`));
  assert.deepEqual([...serverA.violations, ...serverB.violations], []);
});

test('two control planes on one Docker daemon: each agent leaves the other\'s containers and networks alone', { timeout: 150_000 }, async () => {
  const { upA, upB } = await agentsRunning();
  const [a1, a2] = [1, 2].map((id) => observedOf(upA, id).container_id!);
  const b1 = observedOf(upB, 1).container_id!;
  const [ia1, ib1] = await Promise.all([a1, b1].map((id) => docker.getContainer(id).inspect()));
  // Same machine id, same instance id: told apart by the owner label and name.
  assert.equal(ia1.Config.Labels['gpuplane.machine_id'], ib1.Config.Labels['gpuplane.machine_id']);
  assert.equal(ia1.Config.Labels['gpuplane.instance_id'], ib1.Config.Labels['gpuplane.instance_id']);
  assert.notEqual(ia1.Config.Labels['gpuplane.owner'], ib1.Config.Labels['gpuplane.owner']);
  assert.notEqual(ia1.Name, ib1.Name);
  const startedAt = async (id: string) => (await docker.getContainer(id).inspect()).State.StartedAt;
  const [b1Started, a2Started] = [await startedAt(b1), await startedAt(a2)];

  // Server A destroys its instances 1, 3 and 4: agent A removes them; B's instance 1 (same numbers) keeps running.
  serverA.setDesired([web(2, 'secret-of-a2')]);
  await within('agent A converged', serverA.waitForStatus((s) => s.observed.length === 1 && s.desired_version === serverA.version));
  await within('A1 gone', docker.getContainer(a1).wait({ condition: 'removed' }).catch(() => undefined));
  assert.equal(await startedAt(b1), b1Started, 'B\'s container untouched');
  assert.equal((await docker.getContainer(b1).inspect()).State.Running, true);
  assert.equal(await fetchFrom(b1, '127.0.0.1', 9000), 'secret-of-b1\n', 'and its network with it');

  // Server B destroys its instance 1: A's instance 2 keeps running.
  serverB.setDesired([]);
  await within('agent B converged', serverB.waitForStatus((s) => s.observed.length === 0 && s.desired_version === serverB.version));
  await within('B1 gone', docker.getContainer(b1).wait({ condition: 'removed' }).catch(() => undefined));
  assert.equal(await startedAt(a2), a2Started, 'A\'s container untouched');
  assert.equal(await fetchFrom(a2, '127.0.0.1', 9000), 'secret-of-a2\n');
  assert.deepEqual((await containersOfMachine()).map((c) => c.Id), [a2]);

  // The last one goes, and every network with it.
  serverA.setDesired([]);
  await within('networks gone', networksGone(docker, byMachine));
  assert.deepEqual(await containersOfMachine(), []);
  assert.deepEqual([...serverA.violations, ...serverB.violations], []);
});

test('disk: where the daemon cannot limit a container\'s disk, the agent refuses to run unless told; where it can, each container gets its ask\'s size', { timeout: 60_000 }, async (t) => {
  const info = await docker.info();
  const backing = (info.DriverStatus as [string, string][]).find(([k]) => k === 'Backing Filesystem')?.[1];
  const server = await startFakeServer({ machineIdBase });
  t.after(() => server.close());
  const agent = startAgent({
    url: server.url, stateDir: join(dir, 'state-disk'), hardwareFile: join(dir, 'hardware.json'), ports: { start: 47200, end: 47299 },
    apiKey: server.apiKey, allowUnlimitedDisk: false,
  });
  t.after(async () => {
    if (agent.child.exitCode === null) agent.child.kill('SIGKILL');
    await agent.exited;
  });
  if (!storageSizeSupported(info.Driver, backing)) {
    // overlay2 on ext4, as on the test hosts: no quota, so no machine offered.
    assert.equal(await within('agent exits', agent.exited), 1);
    assert.match(agent.output(), new RegExp(`storage driver \\(${info.Driver} on ${backing}\\) cannot limit a container's disk.*--allow-unlimited-disk`));
    return;
  }
  // A host with a quota: the ask's disk as the container's size.
  server.setDesired([{ ...web(5, 'sized'), disk: 3 }]);
  const up = await within('sized container', server.waitForStatus(allRunning([5]))) as Status;
  assert.deepEqual((await docker.getContainer(observedOf(up, 5).container_id!).inspect()).HostConfig.StorageOpt, { size: '3G' });
  assert.equal(server.registrations[0].hardware.disk_limit, true);
  server.setDesired([]);
  await within('networks gone', networksGone(docker, byMachine));
});
