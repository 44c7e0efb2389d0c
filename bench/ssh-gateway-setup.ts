/**
 * The SSH gateway bench's two endpoints to one container (ssh-gateway.bench.ts): either given (environment below), or
 * put in place here as a renter gets them: `gpuplane serve` with its gateway on 127.0.0.1, a real `gpuplane agent`
 * with Docker, and one `ssh_proxy` instance of the test image with sshd (test/helpers/sshd-image.ts) that also
 * publishes 22/tcp (`-p 22:22`). The instance's `ssh_host:ssh_port` (the gateway, through the agent's tunnel) and its
 * published 22/tcp (direct) then reach the same sshd, so the two are compared on the same container in one run.
 *
 * Given endpoints (both, and the key): GPUPLANE_BENCH_SSH_DIRECT=host:port, GPUPLANE_BENCH_SSH_GATEWAY=host:port,
 * GPUPLANE_BENCH_SSH_KEY=<private key file> (user root); GPUPLANE_BENCH_SSH_SERVER_PID: the server process holding the
 * gateway's sessions, for its memory; GPUPLANE_BENCH_SSH_SERVER_URL and GPUPLANE_BENCH_SSH_HOST_KEY (a host's API
 * key): where the heartbeat load's agents register. Without the last two, heartbeats are not measured.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Docker from 'dockerode';
import { BENCH_KEY, startGpuplane, type BenchContext } from './lib.js';
import { request } from './agents-load.js';
import { prepareAgentRun, startAgent, untilStatus, type AgentProcess } from '../test/helpers/agent-process.js';
import { makeKeyPair, ssh, type KeyPair, type SshTarget } from '../test/helpers/openssh.js';
import { sshdImage } from '../test/helpers/sshd-image.js';

export interface Endpoints {
  direct: SshTarget;
  gateway: SshTarget;
  /** The server process the gateway's sessions go through (its resident memory is measured); undefined: not measured. */
  serverPid: number | undefined;
  /** Where protocol-level agents register for the heartbeat figure, with a host's key; undefined: not measured. */
  heartbeat: { url: string; hostKey: string } | undefined;
  stop(): Promise<void>;
}

/** Ports of the agent (published container ports) and of the gateway, apart from the tests' ranges. */
const AGENT_PORTS = { start: 49900, end: 49999 };
const GATEWAY_PORTS = '49000-49899';

const hostPort = (v: string, what: string): { host: string; port: number } => {
  const m = /^(.+):(\d+)$/.exec(v);
  if (!m) throw new Error(`${what} must be host:port, got ${JSON.stringify(v)}`);
  return { host: m[1], port: Number(m[2]) };
};

async function given(ctx: BenchContext): Promise<Endpoints> {
  const e = process.env;
  if (!e.GPUPLANE_BENCH_SSH_GATEWAY || !e.GPUPLANE_BENCH_SSH_KEY) throw new Error('GPUPLANE_BENCH_SSH_DIRECT needs GPUPLANE_BENCH_SSH_GATEWAY and GPUPLANE_BENCH_SSH_KEY');
  const keyFile = e.GPUPLANE_BENCH_SSH_KEY;
  const key: KeyPair = { file: keyFile, publicKey: readFileSync(`${keyFile}.pub`, 'utf8').trim() };
  const knownHosts = '/dev/null';
  return {
    direct: { ...hostPort(e.GPUPLANE_BENCH_SSH_DIRECT!, 'GPUPLANE_BENCH_SSH_DIRECT'), key, knownHosts },
    gateway: { ...hostPort(e.GPUPLANE_BENCH_SSH_GATEWAY, 'GPUPLANE_BENCH_SSH_GATEWAY'), key, knownHosts },
    serverPid: e.GPUPLANE_BENCH_SSH_SERVER_PID ? Number(e.GPUPLANE_BENCH_SSH_SERVER_PID) : undefined,
    heartbeat: e.GPUPLANE_BENCH_SSH_SERVER_URL && e.GPUPLANE_BENCH_SSH_HOST_KEY ? { url: e.GPUPLANE_BENCH_SSH_SERVER_URL, hostKey: e.GPUPLANE_BENCH_SSH_HOST_KEY } : undefined,
    stop: async () => undefined,
  };
}

/** Resolves once `ssh … true` gets in at `t`; after `ms`, fails with what the client said last. */
export async function sshGetsIn(t: SshTarget, what: string, ms = 90_000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const r = await ssh(t, 'true', { timeoutMs: 20_000 });
    if (r.code === 0) return;
    if (Date.now() > until) throw new Error(`ssh into the container ${what} (${t.host}:${t.port}) never got in: exit ${r.code}: ${r.stderr}`);
    await new Promise((res) => setTimeout(res, 300));
  }
}

async function ownSetup(ctx: BenchContext, sessions: number): Promise<Endpoints> {
  const docker = new Docker();
  const dir = mkdtempSync(join(ctx.tmpDir, 'ssh-gateway-'));
  const image = sshdImage();
  await prepareAgentRun(docker, dir, join(dir, 'gpuplane.db'), 400_000_000);
  const server = await startGpuplane(ctx, {
    dir,
    env: {
      GPUPLANE_SECRET_KEY: 'bench-secret-key-0123456789', GPUPLANE_SIM_MACHINES: '1', GPUPLANE_AGENT_OFFLINE_AFTER: '30',
      GPUPLANE_GATEWAY: 'true', GPUPLANE_GATEWAY_BIND: '127.0.0.1', GPUPLANE_GATEWAY_HOST: '127.0.0.1', GPUPLANE_GATEWAY_PORTS: GATEWAY_PORTS,
      // One source (this process) holds every idle session.
      GPUPLANE_GATEWAY_CONNECTIONS_PER_SOURCE: String(sessions + 100),
      // The heartbeating agents are one host account's machines: raise issue 29's per-account registration caps.
      GPUPLANE_HOST_MACHINES_MAX: '10000', GPUPLANE_HOST_REGISTRATIONS_PER_HOUR: '10000',
    },
  });
  let agent: AgentProcess | undefined;
  let machineId = 0;
  const stop = async () => {
    if (agent && agent.child.exitCode === null) {
      agent.child.kill('SIGTERM');
      // An agent that does not stop within 15 s is said and killed, so the bench still cleans up.
      const late = setTimeout(() => {
        ctx.log('  the agent did not exit within 15 s of SIGTERM: killed');
        agent?.child.kill('SIGKILL');
      }, 15_000);
      await agent.exited;
      clearTimeout(late);
    }
    if (machineId) {
      for (const c of await docker.listContainers({ all: true, filters: { label: [`gpuplane.machine_id=${machineId}`] } })) await docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => undefined);
      for (const n of await docker.listNetworks({ filters: { label: [`gpuplane.machine_id=${machineId}`] } })) await docker.getNetwork(n.Id).remove().catch(() => undefined);
    }
    await server.stop();
  };
  try {
    const api = async (method: string, path: string, key: string, body?: unknown) => {
      const r = await request(server.url, method, path, key, body);
      if (r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body;
    };
    const hostKey: string = (await api('POST', '/_emu/users', BENCH_KEY, { email: 'bench-ssh-host@example.com' })).api_key;
    const renterKey: string = (await api('POST', '/_emu/users', BENCH_KEY, { email: 'bench-ssh-renter@example.com' })).api_key;
    const key = await makeKeyPair(dir, 'renter');
    await api('POST', '/api/v0/ssh/', renterKey, { ssh_key: key.publicKey });
    agent = startAgent({ url: server.url, stateDir: join(dir, 'state'), hardwareFile: join(dir, 'hardware.json'), ports: AGENT_PORTS, apiKey: hostKey });
    machineId = (await agent.logged('machine registered')).machine_id;
    await api('PUT', '/api/v0/machines/create_asks/', hostKey, { machine: machineId, price_gpu: 0.3, price_disk: 0.1, end_date: null });
    const rented = await api('PUT', `/api/v0/asks/${machineId * 100 + 1}/`, renterKey, { image: await image, runtype: 'ssh_proxy', env: { '-p 22:22': '1' } });
    const inst = await untilStatus(server.url, renterKey, rented.new_contract, 'running');
    // Host keys are the tests' business (ssh-gateway-e2e), not the bench's: none kept.
    const knownHosts = '/dev/null';
    const direct: SshTarget = { host: '127.0.0.1', port: Number(inst.ports['22/tcp'][0].HostPort), key, knownHosts };
    const gateway: SshTarget = { host: inst.ssh_host, port: inst.ssh_port, key, knownHosts };
    ctx.log(`  instance ${rented.new_contract}: direct ${direct.host}:${direct.port}, gateway ${gateway.host}:${gateway.port}`);
    if (gateway.port === direct.port) throw new Error(`the instance's ssh_port is its published 22/tcp (${direct.port}): the gateway's mapping is not in the instance view`);
    await sshGetsIn(direct, 'direct');
    await sshGetsIn(gateway, 'through the gateway');
    return { direct, gateway, serverPid: server.child.pid, heartbeat: { url: server.url, hostKey }, stop };
  } catch (err) {
    ctx.log(`  agent's last output:\n${agent?.output().slice(-3000)}`);
    await stop();
    throw err;
  }
}

/** The endpoints given in the environment, else a server, an agent and an instance of its own. */
export function endpoints(ctx: BenchContext, sessions: number): Promise<Endpoints> {
  return process.env.GPUPLANE_BENCH_SSH_DIRECT ? given(ctx) : ownSetup(ctx, sessions);
}
