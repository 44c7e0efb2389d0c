/**
 * Real containers behind simulated machines (issue 34 item 1, GPUPLANE_EMU_CONTAINERS=docker). A simulated machine
 * that gets work is *adopted*: in the transaction that changed its desired state it gets what a registered real host
 * has (an agent row with a machine key, `agent: true` in its spec, its address 127.0.0.1), so execute, logs, the SSH
 * gateway, copy and port URLs all take the real hosts' path; and this process runs a real agent for it
 * (src/agent/agent.ts, the code `gpuplane agent` runs) against the server's own URL, on Docker wrapped by the
 * emulator's runtime (emu-runtime.ts: the stand-in nvidia-smi, the simulated pull time, the runtime's faults).
 * Each agent has its own state directory and owner label, publishes on 127.0.0.1 within its machine's port range,
 * and leaves the host firewall alone. The emulator's faults reach it through `faults` (simhost-faults.ts AdoptedHosts).
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import type { Clock } from '../../platform/clock.js';
import { sha256Hex } from '../../platform/crypto.js';
import type { Db, Tx } from '../../platform/db/connect.js';
import { secretToken, type Random } from '../../platform/random.js';
import type { MachinesService } from '../../machines/machines-service.js';
import type { MachineRecord } from '../../machines/machines-offers-contract.js';
import type { DesiredInstanceT } from '../../protocol/agent-protocol-schemas.js';
import { agentAdoption } from '../../agent-server/agent-server-adoption-contract.js';
import {
  createDockerClient, createDockerRuntime, declaredHardware, dockerDataPlane, openStateDir, ownerId, realSystem, startAgent, type RunningAgent,
} from '../../agent/agent-embedding-contract.js';
import { bootSeconds } from '../simulated-hosts/simhost-runtime.js';
import { slowPullSeconds as openSlowPullSeconds } from '../emu-transitions/transitions-contract.js';
import { nvidiaSmiScript } from './nvidia-smi-stub.js';
import { emuRuntime, type EmuRuntime } from './emu-runtime.js';
import { EMU_HEARTBEAT_S, emuFetch, type Silence } from './emu-fetch.js';

/** Registration ids of adopted machines start so: how the agents are found again after a restart. */
export const ADOPTED_PREFIX = 'emu-containers-';
/** How long an adoption waits for its transaction to commit before its agent starts. */
const COMMIT_WAIT_MS = 60_000;

export interface EmuContainersDeps {
  config: Pick<Config, 'databaseUrl' | 'seed' | 'simBootSeconds'>;
  db: Db;
  clock: Clock;
  random: Random;
  log: Logger;
  fleet: Pick<MachinesService, 'machineRecord' | 'updateAgentMachine'>;
  version: string;
}

interface Adopted {
  machineId: number;
  stateDir: string;
  owner: string;
  silence: Silence;
  emu?: EmuRuntime;
  agent?: RunningAgent;
  /** Set as its agent starts: the adoption's commit and the server's listening may both start it. */
  started?: boolean;
  /** The simulated machine's address before its adoption (given back when it is simulated again). */
  original?: string;
  /** The runtime's faults, one after another in the order they came (a recover never overtakes its stall). */
  faults?: Promise<void>;
}

export function emuContainersFactory(deps: EmuContainersDeps) {
  const { config, db, clock, random, log, fleet } = deps;
  const agents = agentAdoption(db);
  const adopted = new Map<number, Adopted>();
  let url: string | undefined;
  let closed = false;
  /** File databases keep the agents' state beside them (their containers outlive a restart); others a temp dir. */
  const file = /^sqlite:(?!:memory:)(.+)$/.exec(config.databaseUrl)?.[1];
  const root = file ? join(dirname(resolve(file)), 'emu-containers') : mkdtempSync(join(tmpdir(), 'gpuplane-emu-containers-'));
  /** One per adoption: an agent being stopped (reset) never shares its directory with the machine's next one. */
  const dirOf = (machineId: number, registrationId: string) => join(root, `machine-${machineId}-${registrationId.slice(ADOPTED_PREFIX.length)}`);

  function hardwareOf(m: MachineRecord) {
    return {
      gpu_name: m.gpu_name, num_gpus: m.num_gpus, gpu_ram: m.spec.gpu_ram, driver_version: m.spec.driver_version, cuda_max_good: m.spec.cuda_max_good,
      cpu_cores: Math.max(1, m.spec.cpu_cores), cpu_ram: Math.max(1, m.spec.cpu_ram), disk_space: m.spec.disk_space,
    };
  }

  /** Adopts the machine inside `tx` (the transaction that changed its desired state) unless it has an agent already. */
  async function desiredChanged(tx: Tx, machineId: number): Promise<void> {
    if (closed || adopted.has(machineId)) return;
    const m = await fleet.machineRecord(machineId, tx);
    // A real host's machine, or one adopted by another process (its agent runs there).
    if (!m || m.spec.agent === true || m.deleted) return;
    const key = secretToken(random, 'gpm_');
    const registrationId = `${ADOPTED_PREFIX}${random.bytes(12).toString('hex')}`;
    const addr = { publicIp: '127.0.0.1', portRange: { start: m.direct_port_start, end: m.direct_port_start + m.direct_port_count - 1 } };
    const hw = declaredHardware(hardwareOf(m), realSystem.hostFacts(), m.spec.disk_space, addr);
    await agents.adopt(tx, {
      machineId, registrationId, keyHash: sha256Hex(key), agentVersion: deps.version, hardware: JSON.stringify(hw), now: clock.now(),
    });
    await fleet.updateAgentMachine(tx, machineId, {
      public_ipaddr: '127.0.0.1', direct_port_start: m.direct_port_start, direct_port_count: m.direct_port_count,
      gpu_name: m.gpu_name, spec: { ...m.spec, agent: true },
    });
    const stateDir = dirOf(machineId, registrationId);
    const state = openStateDir(stateDir);
    state.writeCredentials({ url: url ?? 'http://127.0.0.1', registration_id: registrationId, machine_id: machineId, machine_key: key });
    writeFileSync(join(stateDir, 'hardware.json'), JSON.stringify({ ...hardwareOf(m), public_ipaddr: '127.0.0.1', direct_port_start: addr.portRange.start, direct_port_end: addr.portRange.end }));
    const a: Adopted = { machineId, stateDir, owner: ownerId(registrationId), silence: { machine: false, instances: new Set() }, original: m.public_ipaddr };
    adopted.set(machineId, a);
    log.info({ machine_id: machineId }, 'emulator: the simulated machine runs its instances as real containers');
    void afterCommit(a, sha256Hex(key));
  }

  /** Starts the agent once the adopting transaction committed; forgets the adoption if it rolled back. */
  async function afterCommit(a: Adopted, keyHash: string): Promise<void> {
    const until = Date.now() + COMMIT_WAIT_MS;
    while (!closed && Date.now() < until) {
      const row = await agents.registration(a.machineId).catch(() => undefined);
      if (row?.keyHash === keyHash) return run(a);
      await sleep(100);
    }
    // The adopting transaction rolled back: the machine stays simulated.
    if (adopted.get(a.machineId) === a) adopted.delete(a.machineId);
    rmSync(a.stateDir, { recursive: true, force: true });
  }

  async function run(a: Adopted): Promise<void> {
    if (closed || url === undefined || a.started) return; // started by afterListen once the URL is known
    a.started = true;
    const m = await fleet.machineRecord(a.machineId);
    if (!m) return;
    const docker = createDockerClient();
    let desired: () => DesiredInstanceT[] = () => [];
    const emu = emuRuntime({
      inner: createDockerRuntime({}, docker, { allowUnlimitedDisk: true }),
      docker, clock, owner: { machineId: a.machineId, owner: a.owner },
      nvidiaSmi: (count) => nvidiaSmiScript({
        gpuName: m.gpu_name, count, memoryMib: m.spec.gpu_ram, driverVersion: m.spec.driver_version, cudaVersion: m.spec.cuda_max_good,
        computeCap: m.spec.compute_cap, machineId: a.machineId,
      }),
      gpuIndicesOf: (id) => desired().find((d) => d.instance_id === id)?.gpu_indices ?? [],
      pullSeconds: async (n) => (await slowPullSeconds(a.machineId)) ?? bootSeconds(config.seed, config.simBootSeconds, a.machineId, n),
    });
    a.emu = emu;
    const plane = dockerDataPlane(docker);
    try {
      a.agent = await startAgent({
        url, stateDir: a.stateDir, hardwareFile: join(a.stateDir, 'hardware.json'), publishIp: '127.0.0.1', hostFirewall: false,
        allowUnlimitedDisk: true, gpuTelemetryS: 0, agentVersion: deps.version, heartbeatS: EMU_HEARTBEAT_S,
      }, {
        runtime: emu.runtime, system: realSystem, log: log.child({ emu_machine: a.machineId }), fetch: emuFetch(a.silence),
        dataPlane: (ctx) => {
          desired = ctx.desired;
          return plane(ctx);
        },
      });
    } catch (err) {
      log.error({ err, machine_id: a.machineId }, 'emulator: the agent of a machine with real containers could not start');
      return;
    }
    a.agent.done.catch((err: Error) => {
      log.warn({ machine_id: a.machineId, err: err.message }, 'emulator: the agent of a machine with real containers stopped');
      if (adopted.get(a.machineId) === a) adopted.delete(a.machineId);
      void removeContainers(a.owner);
    });
  }

  /** The slowest slow-pull window open on the machine now (host event `slow_pull`, emu-transitions), or undefined. */
  async function slowPullSeconds(machineId: number): Promise<number | undefined> {
    return openSlowPullSeconds(db, machineId, clock.now()).catch(() => undefined);
  }

  /** The containers and networks of an agent whose machine is gone (reset, deleted): nobody else will remove them. */
  async function removeContainers(owner: string): Promise<void> {
    const docker = createDockerClient();
    const label = [`gpuplane.owner=${owner}`];
    for (const c of await docker.listContainers({ all: true, filters: { label } }).catch(() => [])) {
      await docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => undefined);
    }
    for (const n of await docker.listNetworks({ filters: { label } }).catch(() => [])) {
      await docker.getNetwork(n.Id).remove().catch(() => undefined);
    }
  }

  /** The machine is a simulated one again: no agent row, `agent: false`, its address as before. */
  async function unadopt(a: Adopted): Promise<void> {
    await db.transaction().execute(async (tx) => {
      const m = await fleet.machineRecord(a.machineId, tx);
      await agents.release(tx, a.machineId, ADOPTED_PREFIX);
      if (!m) return;
      await fleet.updateAgentMachine(tx, a.machineId, {
        public_ipaddr: a.original ?? m.public_ipaddr, direct_port_start: m.direct_port_start, direct_port_count: m.direct_port_count,
        gpu_name: m.gpu_name, spec: { ...m.spec, agent: false },
      });
    });
  }

  /** After a restart on a file database: the adopted machines' agents start again from their state directories. */
  async function resume(): Promise<void> {
    let dirs: string[] = [];
    try {
      dirs = readdirSync(root).filter((d) => /^machine-\d+-[0-9a-f]+$/.test(d));
    } catch {
      return;
    }
    for (const d of dirs) {
      const machineId = Number(d.split('-')[1]);
      if (adopted.has(machineId)) continue;
      const row = await agents.registration(machineId);
      const current = row && row.keyHash !== null && row.registrationId.startsWith(ADOPTED_PREFIX) && dirOf(machineId, row.registrationId) === join(root, d);
      if (!current) {
        // An earlier adoption's (the machine was reset since): nothing will run from it again.
        rmSync(join(root, d), { recursive: true, force: true });
        continue;
      }
      const a: Adopted = { machineId, stateDir: join(root, d), owner: ownerId(row.registrationId), silence: { machine: false, instances: new Set() } };
      adopted.set(machineId, a);
      await run(a);
    }
  }

  return {
    desiredChanged,
    /** Which machines this process runs real containers for, and the faults on them (simhost-faults.ts). */
    hosts: {
      has: (machineId: number) => adopted.has(machineId),
      async fault(machineId: number, fault: 'exited' | 'stall' | 'silent' | 'recover', instanceIds: number[] | undefined): Promise<void> {
        const a = adopted.get(machineId);
        if (!a) return;
        switch (fault) {
          case 'silent':
            if (instanceIds === undefined) a.silence.machine = true;
            else for (const id of instanceIds) a.silence.instances.add(id);
            return;
          case 'recover':
            if (instanceIds === undefined) {
              a.silence.machine = false;
              a.silence.instances.clear();
            } else for (const id of instanceIds) a.silence.instances.delete(id);
            break;
        }
        // Docker's side runs apart from the fault's transaction (its reply does not wait for it), one fault after another.
        const emu = a.emu;
        if (!emu) return;
        const act = fault === 'recover' ? () => emu.recover(instanceIds) : fault === 'exited' ? () => emu.crash(instanceIds ?? []) : () => emu.stall(instanceIds);
        a.faults = (a.faults ?? Promise.resolve()).then(act).catch((err: Error) => log.warn({ machine_id: machineId, fault, err: err.message }, 'emulator: a fault on real containers failed'));
      },
    },
    /**
     * `/_emu/reset` empties the database: the adopted machines are simulated again, and their agents and containers go
     * (at once here, so a rent right after the reset adopts its machine anew).
     */
    async reset(): Promise<void> {
      const all = [...adopted.values()];
      adopted.clear();
      for (const a of all) {
        a.emu?.close();
        void Promise.resolve(a.agent?.stop()).then(() => removeContainers(a.owner), () => removeContainers(a.owner))
          .finally(() => rmSync(a.stateDir, { recursive: true, force: true }));
      }
    },
    /** The emulator's lifecycle hook (emulator-lifecycle.ts). */
    lifecycle: {
      name: 'containers',
      async beforeListen(): Promise<void> {
        // Without a daemon every rental would hang at its adoption: say so at the start instead.
        try {
          await createDockerClient().ping();
        } catch (err) {
          throw new Error(`GPUPLANE_EMU_CONTAINERS=docker needs a Docker daemon this server can reach (/var/run/docker.sock or DOCKER_HOST): ${(err as Error).message}`);
        }
      },
      async afterListen(server: { url: string }): Promise<void> {
        url = server.url;
        for (const a of adopted.values()) await run(a);
        await resume();
      },
      async close(): Promise<void> {
        closed = true;
        const all = [...adopted.values()];
        for (const a of all) a.emu?.close();
        await Promise.all(all.map((a) => a.agent?.stop()));
        // Nothing can resume them without the database's file: the containers go with the emulator, and on PostgreSQL
        // (which outlives this process) the machines are simulated again, their instances with them.
        if (!file) {
          await Promise.all(all.map((a) => removeContainers(a.owner)));
          rmSync(root, { recursive: true, force: true });
          if (!/^sqlite:/.test(config.databaseUrl)) {
            for (const a of all) {
              await unadopt(a).catch((err: unknown) => log.warn({ err, machine_id: a.machineId }, 'emulator: could not make the machine simulated again'));
            }
          }
        }
      },
    },
  };
}

export type EmuContainers = ReturnType<typeof emuContainersFactory>;
