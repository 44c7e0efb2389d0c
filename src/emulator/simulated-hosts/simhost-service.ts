/**
 * The emulator's simulated hosts (issue 13): a container runtime kept in the database (simhost-runtime.ts) and an
 * agent that drives it as `gpuplane agent` drives Docker (simhost-agent.ts), so the simulated fleet goes through the
 * same desired state, reconcile and report application as real hosts. The emulator's faults act here, on the runtime
 * or the agent (SimHostPort). Wired in emulator mode only (services.ts): production has no simulated machines.
 */
import type { Config } from '../../config.js';
import type { Store } from '../../platform/db/connect.js';
import type { Scheduler } from '../../platform/scheduler.js';
import type { FleetApi } from '../../machines/machines-contract.js';
import type { SimHostPort } from '../../instances/instances-ports.js';
import { simAgentFactory, type SimReportPort } from './simhost-agent.js';
import { CRASH_EXIT_CODE, pullKey } from './simhost-runtime.js';
import { simhostStore } from './simhost-store.js';

export interface SimhostDeps {
  store: Store;
  fleet: Pick<FleetApi, 'machine' | 'lockMachine' | 'lockIdleMachines'>;
  reports: SimReportPort;
  scheduler: Scheduler;
  config: Pick<Config, 'seed' | 'simBootSeconds'>;
  notify: () => void;
}

export function simhostServiceFactory({ store, fleet, reports, scheduler, config, notify }: SimhostDeps) {
  const sim = simhostStore(store.db, store.dialect);
  const agent = simAgentFactory({ sim, fleet, reports, scheduler, config, notify });

  const port: SimHostPort = {
    lockMachine: (tx, machineId) => sim.lockMachine(tx, machineId),

    async fault(tx, machineId, fault, instances, now, wholeMachine = false) {
      const ids = instances.map((i) => i.id);
      const keys = instances.map((i) => pullKey({ image: i.image, repull: i.repull === 1, instance_id: i.id, generation: i.generation }));
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
    /** Where the instance and machine faults act (instances-jobs.ts). */
    port,
    /** The machine's containers as its runtime lists them (tests, diagnostics). */
    containers: async (machineId: number) => sim.containers(store.db, machineId),
  };
}

export type SimhostService = ReturnType<typeof simhostServiceFactory>;
