/**
 * The emulator's simulated hosts (issue 13): a container runtime kept in the database (simhost-runtime.ts) and an
 * agent that drives it as `gpuplane agent` drives Docker (simhost-agent.ts), so the simulated fleet goes through the
 * same desired state, reconcile and report application as real hosts. The emulator's instance and machine faults act
 * here, on the runtime or the agent (simhost-faults.ts), and the instances feature's requests to a machine's host
 * (execute, snapshot, logs) are answered here for simulated machines (simhost-hosts.ts). Wired in emulator mode only
 * (services.ts): production has no simulated machines.
 */
import type { Config } from '../../config.js';
import type { Clock } from '../../platform/clock.js';
import type { Store } from '../../platform/db/connect.js';
import type { Scheduler } from '../../platform/scheduler.js';
import type { MachinesApi, NewMachine, SilentMachines } from '../../machines/machines-contract.js';
import type { NewMachineInput } from '../emulator-schemas.js';
import { machineFromInput } from './simhost-machine-input.js';
import type { InstanceHostsPort, InstancesForHosts } from '../../instances/instances-hosts-contract.js';
import { simAgentFactory, type SimReportPort } from './simhost-agent.js';
import { simFaultsFactory, type AdoptedHosts, type SimHostFaults } from './simhost-faults.js';
import { emulatedHostsPort } from './simhost-hosts.js';
import { simHeartbeatFactory } from './simhost-heartbeat.js';
import { CRASH_EXIT_CODE, pullKey } from './simhost-runtime.js';
import { simhostStore } from './simhost-store.js';

export interface SimhostDeps {
  store: Store;
  fleet: Pick<MachinesApi, 'machine' | 'lockMachine' | 'lockIdleMachines' | 'setMachineFault'> & {
    silent: SilentMachines;
    addMachine(build: (n: number) => NewMachine, opts: { ownerUserId?: number; listed?: boolean }): Promise<{ machine_id: number; offer_ids: number[] }>;
  };
  reports: SimReportPort;
  /** What the simulated hosts' faults and answers read of instances and do to them. */
  instances: InstancesForHosts;
  clock: Clock;
  scheduler: Scheduler;
  config: Pick<Config, 'seed' | 'simBootSeconds'>;
  notify: () => void;
}

export function simhostServiceFactory({ store, fleet, reports, instances, clock, scheduler, config, notify }: SimhostDeps) {
  /** Issue 34: the machines running real containers, whose faults act on their agents (src/emulator/emu-containers/). */
  let adopted: AdoptedHosts | undefined;
  const sim = simhostStore(store.db, store.dialect);
  const agent = simAgentFactory({ sim, fleet, reports, scheduler, config, notify });

  const runtime: SimHostFaults = {
    lockMachine: (tx, machineId) => sim.lockMachine(tx, machineId),

    async fault(tx, machineId, fault, rows, now, wholeMachine = false) {
      const ids = rows.map((i) => i.id);
      const keys = rows.map((i) => pullKey({ image: i.image, repull: i.repull === 1, instance_id: i.id, generation: i.generation }));
      switch (fault) {
        case 'exited':
          await sim.putInstances(tx, machineId, ids, { crash: 1 });
          return;
        case 'silent':
          await sim.putInstances(tx, machineId, ids, { silent: 1 });
          return;
        case 'stall':
          // The image is gone from the machine and pulling it again hangs: the agent cannot make the container again.
          await sim.removeContainersOf(tx, ids);
          for (const key of keys) await sim.putImage(tx, machineId, key, null);
          return;
        case 'recover':
          await sim.putInstances(tx, machineId, ids, { silent: 0, crash: 0 });
          await sim.restartCrashed(tx, ids, CRASH_EXIT_CODE);
          await sim.resumePulls(tx, machineId, now, wholeMachine ? undefined : keys);
          return;
      }
    },

    step: (tx, machineId, now) => agent.step(tx, machineId, now),
  };

  return {
    /** The instances feature's hook: a machine's desired state changed (instances-module `onDesiredChange`). */
    desiredChanged: agent.desiredChanged,
    /** The machines' runtimes and agents, where the faults act: lock one, fault it, make its agent pass (tests too). */
    runtime,
    /** The simulated hosts' heartbeats: a host made silent is lost once past the timeout (simhost-heartbeat.ts). */
    heartbeat: simHeartbeatFactory({ store, clock, scheduler, machines: fleet.silent, hostLost: instances.hostLost }),
    /** The instance and machine faults of contract §2, by name (registered with the emulator by the root). */
    faults: simFaultsFactory({ instances, fleet, sim: runtime, clock, adopted: () => adopted }),
    /** Issue 34: the machines running real containers (GPUPLANE_EMU_CONTAINERS=docker) take their faults there. */
    useAdopted(hosts: AdoptedHosts): void {
      adopted = hosts;
    },
    /**
     * The instances feature's host port in emulator mode: real hosts' machines asked through `real` (their agents),
     * the simulated ones answered here.
     */
    hostsPort: (real: InstanceHostsPort): InstanceHostsPort => emulatedHostsPort({ real, fleet, instances }),
    /** `POST /_emu/machines`: a simulated machine from the body's fields, the rest drawn from the catalogue by the seed. */
    addMachine: (input: NewMachineInput) =>
      fleet.addMachine((n) => machineFromInput(input, config.seed, n), { ownerUserId: input.owner_user_id, listed: input.listed }),
    /** The machine's containers as its runtime lists them (tests, diagnostics). */
    containers: async (machineId: number) => sim.containers(store.db, machineId),
  };
}

export type SimhostService = ReturnType<typeof simhostServiceFactory>;
