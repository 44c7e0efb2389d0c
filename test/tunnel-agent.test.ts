// The tunnel wired into the real agent (src/agent/agent.ts): started against a test app listening on a port (a fake
// container runtime and nvidia-smi, as in agent-protocol.test.ts), it registers, opens its tunnel, and hands the
// streams to the data plane it was given, with the machine and the desired state in its context. Without a data plane
// every stream is refused with a reason; with `tunnel: false` there is no tunnel.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startAgent, type AgentConfig, type AgentDataPlaneContext, type AgentDeps } from '../src/agent/agent.js';
import { silentLog } from '../src/agent/agent-log.js';
import { realSystem, type AgentSystem } from '../src/agent/agent-system.js';
import { programRunner } from '../src/agent/hardware.js';
import { TunnelError } from '../src/tunnels/tunnels-contract.js';
import { DIALECTS, OWNER_KEY } from './helpers/harness.js';
import { fakeRuntime } from './agent-fake-runtime.js';
import { fakePlane, listeningApp, roundTrip, until, type TunnelServer } from './tunnel-fixtures.js';

const FIX = join(import.meta.dirname, 'fixtures', 'nvidia-smi');
const scratch = mkdtempSync(join(tmpdir(), 'gpuplane-tunnel-agent-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
const smiDir = mkdtempSync(join(scratch, 'bin-'));
copyFileSync(join(FIX, 'fake-nvidia-smi.sh'), join(smiDir, 'nvidia-smi'));
let ids = 0;
let dirs = 0;
const system: AgentSystem = {
  ...realSystem,
  randomId: () => `reg_tunnel_${process.pid}_${String(++ids).padStart(8, '0')}`,
  exec: programRunner({ ...process.env, PATH: `${smiDir}:${process.env.PATH}`, FAKE_NVIDIA_SMI: join(FIX, 'rtx4090-550') }),
  hostFacts: () => ({ cpuName: 'AMD Ryzen 9 7950X 16-Core Processor', cpuCores: 32, cpuArch: 'amd64', ramMb: 131072, hostname: 'rig-1', firstIpv4: '192.0.2.10' }),
  freeDiskGb: async () => 1800,
  isPortFree: async () => true,
};

function agentOn(server: TunnelServer, over: Partial<AgentConfig> = {}, deps: Partial<AgentDeps> = {}) {
  return startAgent(
    {
      url: server.url, apiKey: OWNER_KEY, stateDir: join(scratch, `state-${++dirs}`), heartbeatS: 3600, resyncS: 3600, agentVersion: '0.1.0-test',
      publishIp: '127.0.0.1', portRange: { start: 42000, end: 42099 }, hostFirewall: false, tunnelBackoff: { firstMs: 100, maxMs: 400 }, ...over,
    },
    { runtime: fakeRuntime().runtime, system, log: silentLog, ...deps },
  );
}

for (const dialect of DIALECTS) {
  test(`[${dialect}] the agent opens its tunnel and serves streams with the data plane it was given`, async () => {
    const server = await listeningApp(dialect);
    const plane = fakePlane();
    let ctx: AgentDataPlaneContext | undefined;
    const desiredSeen: number[] = [];
    let closed = false;
    const agent = await agentOn(server, {}, {
      dataPlane: (c) => {
        ctx = c;
        c.onDesired((instances) => desiredSeen.push(instances.length));
        return { handle: plane.handler, close: () => void (closed = true) };
      },
    });
    try {
      assert.equal(ctx?.machineId, agent.machineId);
      await until(() => server.app.services.tunnels.held().includes(agent.machineId), 'the agent\'s tunnel');
      const s = await server.app.services.tunnels.api.open(agent.machineId, { kind: 'ssh', instanceId: 5 }, { source: '198.51.100.9:2222' });
      const { back, end } = await roundTrip(s, [Buffer.from('through the agent')]);
      assert.equal(back.text, 'through the agent');
      assert.equal(end.user, 'root');
      await until(() => desiredSeen.length > 0, 'the first desired state to reach the data plane');
      assert.deepEqual(ctx!.desired(), []);
    } finally {
      await agent.stop();
      await server.app.close();
    }
    assert.equal(closed, true, 'the data plane is closed with the agent');
  });

  test(`[${dialect}] an agent without a data plane refuses every stream, with a reason; with tunnel off it holds none`, async () => {
    const server = await listeningApp(dialect);
    const bare = await agentOn(server);
    const off = await agentOn(server, { tunnel: false });
    try {
      await until(() => server.app.services.tunnels.held().includes(bare.machineId), 'the tunnel');
      await assert.rejects(server.app.services.tunnels.api.open(bare.machineId, { kind: 'ssh', instanceId: 5 }, { source: 'x' }), (e: unknown) =>
        e instanceof TunnelError && e.code === 'refused' && /no data plane/.test(e.message));
      await sleep(500);
      assert.equal(server.app.services.tunnels.held().includes(off.machineId), false);
      await assert.rejects(server.app.services.tunnels.api.open(off.machineId, { kind: 'ssh', instanceId: 5 }, { source: 'x' }), (e: unknown) =>
        e instanceof TunnelError && e.code === 'not_connected');
    } finally {
      await bare.stop();
      await off.stop();
      await server.app.close();
    }
  });
}
