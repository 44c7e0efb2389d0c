// The real agent (src/agent/agent.ts) against a fake server that checks every request with the protocol's schemas:
// registration and credential reuse, the long-poll bringing changes (and the heartbeat when the long-poll died),
// observed state, log answers, a revoked credential, declared hardware, settings; and no secret in the log.
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAgent, type AgentConfig, type RunningAgent } from '../src/agent/agent.js';
import type { AgentLog } from '../src/agent/agent-log.js';
import { agentSettings, AgentUsageError, defaultStateDir } from '../src/agent/agent-options.js';
import { realSystem, type AgentSystem } from '../src/agent/agent-system.js';
import { programRunner } from '../src/agent/hardware.js';
import { AgentFatalError } from '../src/agent/registration.js';
import { desiredInstance, startFakeServer, type FakeServer } from './agent-fake-server.js';
import { fakeRuntime } from './agent-fake-runtime.js';

const FIX = join(import.meta.dirname, 'fixtures', 'nvidia-smi');
const scratch = mkdtempSync(join(tmpdir(), 'gpuplane-agent-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
let dirs = 0;
const freshDir = () => join(scratch, `state-${++dirs}`);

// A fake nvidia-smi on PATH showing an RTX 4090 with driver 550.
const smiDir = mkdtempSync(join(scratch, 'bin-'));
copyFileSync(join(FIX, 'fake-nvidia-smi.sh'), join(smiDir, 'nvidia-smi'));

let ids = 0;
const system: AgentSystem = {
  ...realSystem,
  randomId: () => `reg_test_${String(++ids).padStart(12, '0')}`,
  exec: programRunner({ ...process.env, PATH: `${smiDir}:${process.env.PATH}`, FAKE_NVIDIA_SMI: join(FIX, 'rtx4090-550') }),
  hostFacts: () => ({ cpuName: 'AMD Ryzen 9 7950X 16-Core Processor', cpuCores: 32, cpuArch: 'amd64', ramMb: 131072, hostname: 'rig-1', firstIpv4: '192.0.2.10' }),
  freeDiskGb: async () => 1800,
  isPortFree: async () => true,
};

function recordingLog() {
  const lines: string[] = [];
  const rec = (level: string) => (fields: object, msg: string) => void lines.push(JSON.stringify({ level, msg, ...fields }));
  const log: AgentLog = { debug: rec('debug'), info: rec('info'), warn: rec('warn'), error: rec('error') };
  return { log, lines };
}

const agents: RunningAgent[] = [];
after(async () => {
  for (const a of agents) await a.stop();
});

async function run(server: FakeServer, over: Partial<AgentConfig> = {}, deps: { runtime?: ReturnType<typeof fakeRuntime>; log?: AgentLog } = {}) {
  const fake = deps.runtime ?? fakeRuntime();
  const agent = await startAgent(
    // The host's firewall is left alone here: agent-isolation.security.test.ts covers the rule on real Docker.
    { url: server.url, apiKey: server.apiKey, stateDir: freshDir(), heartbeatS: 3600, resyncS: 3600, agentVersion: '0.1.0-test', publishIp: '127.0.0.1', portRange: { start: 42000, end: 42099 }, hostFirewall: false, ...over },
    { runtime: fake.runtime, system, log: deps.log ?? recordingLog().log },
  );
  agents.push(agent);
  return { agent, fake };
}

const stateOf = (id: number) => (s: { observed: { instance_id: number; state: string }[] }) => s.observed.find((o) => o.instance_id === id)?.state;

describe('registration', () => {
  test('issue 29 item 14: a host that cannot limit a container\'s disk is not offered unless its operator allows it, and says so', async () => {
    const server = await startFakeServer();
    await assert.rejects(
      run(server, {}, { runtime: fakeRuntime({ storageSizeLimit: false }) }),
      (e: Error) => e instanceof AgentFatalError && /storage driver \(overlay2 on extfs\) cannot limit a container's disk.*--allow-unlimited-disk/.test(e.message),
    );
    assert.equal(server.registrations.length, 0, 'nothing registered');
    const unlimited = await run(server, { allowUnlimitedDisk: true }, { runtime: fakeRuntime({ storageSizeLimit: false }) });
    assert.equal(server.registrations[0].hardware.disk_limit, false);
    const limited = await startFakeServer();
    const quota = await run(limited);
    assert.equal(limited.registrations[0].hardware.disk_limit, true);
    assert.deepEqual([...server.violations, ...limited.violations], []);
    await unlimited.agent.stop();
    await quota.agent.stop();
    await server.close();
    await limited.close();
  });

  test('first start registers the discovered hardware; the credential is kept owner-only; a restart reuses it without the key', async () => {
    const server = await startFakeServer();
    const stateDir = freshDir();
    const { agent } = await run(server, { stateDir });
    assert.equal(server.registrations.length, 1);
    const reg = server.registrations[0];
    assert.equal(reg.agent_version, '0.1.0-test');
    assert.match(reg.registration_id, /^reg_test_/);
    assert.deepEqual(
      [reg.hardware.gpu_name, reg.hardware.num_gpus, reg.hardware.gpu_ram, reg.hardware.driver_version, reg.hardware.cuda_max_good, reg.hardware.compute_cap, reg.hardware.pcie_bw],
      ['RTX 4090', 1, 24564, '550.54.14', 12.4, 890, 31.5],
    );
    assert.deepEqual(
      [reg.hardware.hardware_declared, reg.hardware.public_ipaddr, reg.hardware.direct_port_start, reg.hardware.direct_port_end, reg.hardware.disk_space, reg.hardware.cpu_cores],
      [false, '192.0.2.10', 42000, 42099, 1800, 32],
    );
    const file = join(stateDir, 'agent.json');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(statSync(stateDir).mode & 0o777, 0o700);
    const saved = JSON.parse(readFileSync(file, 'utf8'));
    assert.deepEqual(saved, { url: server.url, registration_id: reg.registration_id, machine_id: agent.machineId, machine_key: server.machineKey });
    await agent.stop();

    const again = await run(server, { stateDir, apiKey: undefined, url: undefined });
    assert.equal(server.registrations.length, 1, 'no second registration');
    assert.equal(again.agent.machineId, agent.machineId);
    server.setDesired([]);
    const s = await server.nextStatus(() => true);
    assert.deepEqual(s.observed, []);
    assert.equal(s.hardware?.gpu_name, 'RTX 4090', 'hardware in the first report after a start');
    assert.deepEqual(server.violations, []);
    await again.agent.stop();
    await server.close();
  });

  test('a registration that failed on the server side is retried with the same registration id', async () => {
    const server = await startFakeServer({ failRegistrations: 1 });
    await run(server);
    assert.equal(server.registrations.length, 2);
    assert.equal(server.registrations[0].registration_id, server.registrations[1].registration_id);
    await server.close();
  });

  test('without a credential, the API key is needed; a refused key stops the start, naming why', async () => {
    const server = await startFakeServer();
    await assert.rejects(run(server, { apiKey: undefined }), (e: Error) => e instanceof AgentFatalError && /--api-key/.test(e.message));
    await assert.rejects(run(server, { apiKey: 'gpk_wrong' }), (e: Error) => e instanceof AgentFatalError && /registration refused: invalid API key \(HTTP 401/.test(e.message));
    await assert.rejects(run(server, { url: undefined }), (e: Error) => e instanceof AgentFatalError && /--url/.test(e.message));
    assert.equal(server.machineKey, null);
    await server.close();
  });
});

describe('desired and observed state', () => {
  test('a change reaches the agent through the long-poll (the heartbeat is an hour away) and the result is reported', async () => {
    const server = await startFakeServer();
    const { fake } = await run(server);
    await server.whenPollHeld();
    server.setDesired([desiredInstance({ instance_id: 11, ports: ['22/tcp'], gpu_indices: [0] })]);
    const s = await server.waitForStatus((x) => stateOf(11)(x) === 'running');
    const o = s.observed[0];
    const [c] = fake.byInstance(11);
    assert.equal(o.container_id, c.id);
    assert.equal(o.generation, 1);
    assert.deepEqual(o.ports, { '22/tcp': [{ HostIp: '127.0.0.1', HostPort: String(c.boundHostPorts[0]) }] });
    assert.ok(c.boundHostPorts[0] >= 42000 && c.boundHostPorts[0] <= 42099);
    assert.deepEqual(c.spec.gpuDeviceIds, ['0'], 'discovered hardware: GPUs as device requests');
    assert.equal(s.desired_version, server.version);

    fake.exit(c.id, 2);
    const exited = await server.waitForStatus((x) => stateOf(11)(x) === 'exited');
    assert.equal(exited.observed[0].exit_code, 2);

    server.setDesired([]);
    await server.waitForStatus((x) => x.observed.length === 0 && x.desired_version === server.version);
    assert.equal(fake.byInstance(11).length, 0);
    assert.deepEqual(server.violations, []);
    await server.close();
  });

  test('a long-poll that died silently: the heartbeat reply names a newer version and the agent fetches it', async () => {
    const server = await startFakeServer();
    const { log, lines } = recordingLog();
    await run(server, { heartbeatS: 0.2, waitS: 60 }, { log });
    await server.whenPollHeld();
    assert.equal(server.killHeldPolls(), 1);
    server.setDesired([desiredInstance({ instance_id: 12 })]);
    await server.waitForStatus((x) => stateOf(12)(x) === 'running');
    // The dead poll was dropped on the heartbeat's word, not by its deadline (60 s + grace) as a failure.
    assert.equal(lines.filter((l) => l.includes('desired-state request failed')).length, 0, lines.join('\n'));
    assert.deepEqual(server.violations, []);
    await server.close();
  });

  test('log requests are answered with the container\'s log, tail applied; an instance without container says so', async () => {
    const server = await startFakeServer();
    const { fake } = await run(server);
    server.setDesired([desiredInstance({ instance_id: 13 })]);
    await server.waitForStatus((x) => stateOf(13)(x) === 'running');
    const [c] = fake.byInstance(13);
    c.log += 'line a\nline b\nline c\n';
    assert.deepEqual(await server.requestLogs(13, 2), { text: 'line b\nline c\n' });
    assert.deepEqual(await server.requestLogs(13, null, 'start'), { text: `started ${c.name}\n` });
    assert.deepEqual(await server.requestLogs(99), { text: '', error: 'instance 99 has no container on this machine' });
    assert.deepEqual(server.violations, []);
    await server.close();
  });

  test('a refused machine credential (machine deleted) stops the agent with what to do', async () => {
    const server = await startFakeServer();
    const { agent } = await run(server, { heartbeatS: 0.2 });
    server.setDesired([]);
    await server.waitForStatus(() => true);
    server.revokeMachineKey();
    await assert.rejects(agent.done, (e: Error) => e instanceof AgentFatalError && /agent\.json/.test(e.message));
    await server.close();
  });
});

describe('secrets', () => {
  test('no key, env value or registry password reaches the log', async () => {
    const server = await startFakeServer();
    const { log, lines } = recordingLog();
    const { fake } = await run(server, {}, { log });
    fake.failPull.set('private/img:1', 'pull of private/img:1 failed: unauthorized');
    server.setDesired([
      desiredInstance({ instance_id: 14, env: { HF_TOKEN: 'hf_envsecret_123' }, docker_login: { username: 'u', password: 'registry-pass-456', server: 'ghcr.io' } }),
      desiredInstance({ instance_id: 15, image: 'private/img:1', docker_login: { username: 'u', password: 'registry-pass-789', server: 'ghcr.io' } }),
    ]);
    await server.waitForStatus((x) => stateOf(14)(x) === 'running' && stateOf(15)(x) === 'failed');
    const text = lines.join('\n');
    assert.ok(lines.length > 3, 'the agent logged its work');
    for (const secret of [server.apiKey, server.machineKey!, 'hf_envsecret_123', 'registry-pass-456', 'registry-pass-789']) {
      assert.equal(text.includes(secret), false, `the log holds ${secret}`);
    }
    await server.close();
  });
});

describe('declared hardware', () => {
  const file = (content: object) => {
    const p = join(scratch, `hw-${++dirs}.json`);
    writeFileSync(p, JSON.stringify(content));
    return p;
  };
  const declared = { gpu_name: 'RTX 4090', num_gpus: 2, gpu_ram: 24564, driver_version: '550.54.14', cuda_max_good: 12.4, public_ipaddr: '198.51.100.4', direct_port_start: 45000, direct_port_end: 45099 };

  test('the file\'s fields, the host\'s for the rest, marked declared; no GPU device requests', async () => {
    const server = await startFakeServer();
    const { fake } = await run(server, { hardwareFile: file(declared), portRange: undefined });
    const hw = server.registrations[0].hardware;
    assert.deepEqual(
      [hw.hardware_declared, hw.gpu_name, hw.num_gpus, hw.gpus.map((g) => g.index), hw.public_ipaddr, hw.direct_port_start, hw.direct_port_end, hw.cpu_name, hw.hostname],
      [true, 'RTX 4090', 2, [0, 1], '198.51.100.4', 45000, 45099, 'AMD Ryzen 9 7950X 16-Core Processor', 'rig-1'],
    );
    server.setDesired([desiredInstance({ instance_id: 16, gpu_indices: [1] })]);
    await server.waitForStatus((x) => stateOf(16)(x) === 'running');
    assert.equal(fake.byInstance(16)[0].spec.gpuDeviceIds, null);
    await server.close();
  });

  test('--public-ip wins over the file; a missing or unknown field is refused before registering', async () => {
    const server = await startFakeServer();
    await run(server, { hardwareFile: file(declared), publicIp: '203.0.113.9' });
    assert.equal(server.registrations[0].hardware.public_ipaddr, '203.0.113.9');
    const { gpu_ram: _omitted, ...missing } = declared;
    await assert.rejects(run(server, { hardwareFile: file(missing) }), /missing gpu_ram/);
    await assert.rejects(run(server, { hardwareFile: file({ ...declared, gpu_nmae: 'x' }) }), /unknown field "gpu_nmae"/);
    await assert.rejects(run(server, { hardwareFile: file({ ...declared, num_gpus: 0 }) }), /num_gpus/);
    assert.equal(server.registrations.length, 1);
    await server.close();
  });
});

describe('settings', () => {
  test('flags win over the environment; defaults; mistakes are usage errors naming the setting', () => {
    const env = { GPUPLANE_URL: 'http://env:1/api/v0/', GPUPLANE_API_KEY: 'k_env', GPUPLANE_AGENT_STATE_DIR: '/s', GPUPLANE_AGENT_PORT_RANGE: '41000-41010', GPUPLANE_AGENT_PUBLISH_IP: '127.0.0.1' };
    const s = agentSettings({ url: 'http://flag:2', heartbeatInterval: '5' }, env, false);
    assert.deepEqual(
      [s.config.url, s.config.apiKey, s.config.stateDir, s.config.portRange, s.config.publishIp, s.config.heartbeatS, s.runtime, s.logLevel],
      ['http://flag:2', 'k_env', '/s', { start: 41000, end: 41010 }, '127.0.0.1', 5, 'docker', 'info'],
    );
    assert.equal(agentSettings({}, env, false).config.url, 'http://env:1');
    assert.equal(defaultStateDir({}, true), '/var/lib/gpuplane-agent');
    assert.equal(defaultStateDir({ XDG_STATE_HOME: '/x' }, false), '/x/gpuplane-agent');
    for (const [flags, re] of [
      [{ runtime: 'podman' }, /--runtime/],
      [{ portRange: '5-1' }, /--port-range/],
      [{ publicIp: 'example.com' }, /--public-ip/],
      [{ heartbeatInterval: '0' }, /--heartbeat-interval/],
      [{ url: 'ftp://x' }, /--url/],
    ] as const) {
      assert.throws(() => agentSettings(flags, {}, false), (e: Error) => e instanceof AgentUsageError && re.test(e.message));
    }
  });

  test('issue 29 items 13 and 14: container limits, the host firewall and unlimited disk, from flags or the environment', () => {
    const none = agentSettings({}, {}, false).config;
    assert.deepEqual([none.pidsLimit, none.logMaxSizeMb, none.logMaxFiles, none.hostFirewall], [undefined, undefined, undefined, undefined]);
    const env = { GPUPLANE_AGENT_PIDS_LIMIT: '512', GPUPLANE_AGENT_LOG_MAX_SIZE: '20', GPUPLANE_AGENT_LOG_MAX_FILES: '5', GPUPLANE_AGENT_HOST_FIREWALL: 'off' };
    const c = agentSettings({}, env, false).config;
    assert.deepEqual([c.pidsLimit, c.logMaxSizeMb, c.logMaxFiles, c.hostFirewall], [512, 20, 5, false]);
    assert.equal(agentSettings({ pidsLimit: '100' }, env, false).config.pidsLimit, 100, 'the flag wins');
    // Commander's `--no-host-firewall` gives false; its absence gives true, which leaves the variable to decide.
    assert.equal(agentSettings({ hostFirewall: false }, {}, false).config.hostFirewall, false);
    assert.equal(agentSettings({ hostFirewall: true }, env, false).config.hostFirewall, false);
    for (const [flags, re] of [
      [{ pidsLimit: '8' }, /--pids-limit must be a whole number from 32/],
      [{ pidsLimit: '1e3' }, /--pids-limit/],
      [{ logMaxSize: '0' }, /--log-max-size/],
      [{ logMaxFiles: '1000' }, /--log-max-files/],
    ] as const) {
      assert.throws(() => agentSettings(flags, {}, false), (e: Error) => e instanceof AgentUsageError && re.test(e.message));
    }
    assert.throws(() => agentSettings({}, { GPUPLANE_AGENT_HOST_FIREWALL: 'maybe' }, false), /GPUPLANE_AGENT_HOST_FIREWALL must be on or off/);
    assert.equal(agentSettings({ allowUnlimitedDisk: true }, {}, false).config.allowUnlimitedDisk, true);
    assert.equal(agentSettings({}, { GPUPLANE_AGENT_ALLOW_UNLIMITED_DISK: 'on' }, false).config.allowUnlimitedDisk, true);
    assert.equal(agentSettings({}, {}, false).config.allowUnlimitedDisk, undefined);
  });
});
