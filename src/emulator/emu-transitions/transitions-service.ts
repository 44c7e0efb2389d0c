/**
 * Transitions under control (issue 34 item 4), as moto's state manager gives: rules that time the simulated hosts'
 * work for an instance, per resource kind or per instance: `immediate`, `delay` N seconds of service time, `manual`
 * (the instance stays loading until advanced), or `default` (the seeded GPUPLANE_SIM_BOOT_SECONDS). The rules are
 * rows (transitions-tables.ts) that the simulated agent reads with its machines' runtimes and applies in its pass
 * (simhost-agent.ts, transitions-rules.ts); this service sets, lists and clears them, and advances one instance: its
 * boot's gate or pull ends now and its machine's agent passes at once.
 */
import type { Config } from '../../config.js';
import type { Clock } from '../../platform/clock.js';
import type { Store, Tx } from '../../platform/db/connect.js';
import { ApiError } from '../../platform/errors.js';
import type { Scheduler } from '../../platform/scheduler.js';
import { isSilent, type MachinesApi } from '../../machines/machines-contract.js';
import type { InstancesForHosts } from '../../instances/instances-hosts-contract.js';
import type { SimHostFaults } from '../simulated-hosts/simhost-faults.js';
import { JOB_SIM_STEP } from '../simulated-hosts/simhost-agent.js';
import { pullKey } from '../simulated-hosts/simhost-runtime.js';
import { simhostStore } from '../simulated-hosts/simhost-store.js';
import type { TransitionMode } from './transitions-rules.js';
import { transitionsStore } from './transitions-store.js';

export interface TransitionsDeps {
  store: Store;
  clock: Clock;
  scheduler: Scheduler;
  config: Pick<Config, 'simBootSeconds'>;
  instances: Pick<InstancesForHosts, 'write' | 'find'>;
  fleet: Pick<MachinesApi, 'machine'>;
  /** The simulated machines' runtimes and agents (simhost-service.ts `runtime`). */
  sim: Pick<SimHostFaults, 'lockMachine' | 'step'>;
}

export interface TransitionRequest {
  kind?: 'instance';
  instance_id?: number;
  mode: TransitionMode;
  seconds?: number;
}

interface TransitionView {
  kind: string;
  instance_id: number | null;
  mode: string;
  seconds: number | null;
  updated_at: number;
}

const scopeOf = (kind: string, instanceId: number | undefined) => (instanceId === undefined ? kind : `${kind}:${instanceId}`);

export function transitionsServiceFactory({ store, clock, scheduler, config, instances, fleet, sim }: TransitionsDeps) {
  const simStore = simhostStore(store.db, store.dialect);

  /** The machine of a live instance, when a simulated host runs it; 404 / 409 otherwise. */
  async function simulatedMachineOf(tx: Tx, instanceId: number, what: string) {
    const inst = await instances.find(instanceId, tx);
    if (!inst) throw new ApiError('not_found', `instance ${instanceId} not found`);
    if (inst.machine_id === null) return { inst, machine: undefined };
    const machine = await fleet.machine(inst.machine_id, tx);
    if (machine?.agent) {
      throw new ApiError('conflict', `instance ${instanceId} runs on machine ${machine.id}, run by a real host (gpuplane agent): ${what} is the simulated hosts'`);
    }
    return { inst, machine };
  }

  /**
   * Boots waiting for an advance whose rule may have changed get a pass now: one that is manual no more goes on (a
   * step runs it: at once with a real clock, at the next advance of a virtual one).
   */
  async function recheck(tx: Tx, now: number): Promise<void> {
    if ((await simStore.recheckManualGates(tx, now)).length) await scheduler.ensure(JOB_SIM_STEP, now, { tx });
  }

  const view = (r: { kind: string; instance_id: number | null; mode: string; seconds: number | null; updated_at: number }): TransitionView => ({
    kind: r.kind,
    instance_id: r.instance_id,
    mode: r.mode,
    seconds: r.seconds === null ? null : Number(r.seconds),
    updated_at: Number(r.updated_at),
  });

  return {
    /** `PUT /_emu/transitions`: sets the kind's rule, or one instance's. */
    async set(req: TransitionRequest): Promise<{ success: true; transition: TransitionView }> {
      const kind = req.kind ?? 'instance';
      if (req.mode === 'delay' && req.seconds === undefined) throw new ApiError('bad_request', 'seconds: mode delay needs seconds (of service time)');
      if (req.mode !== 'delay' && req.seconds !== undefined) throw new ApiError('bad_request', `seconds: only with mode delay, not ${req.mode}`);
      const seconds = req.mode === 'delay' ? req.seconds! : null;
      return instances.write(async (tx) => {
        const now = clock.now();
        if (req.instance_id !== undefined) await simulatedMachineOf(tx, req.instance_id, 'its timing');
        const scope = scopeOf(kind, req.instance_id);
        const row = { scope, kind, instance_id: req.instance_id ?? null, mode: req.mode, seconds, updated_at: now };
        // The kind's `default` is no rule at all; an instance's `default` stands (the seeded timing, whatever the kind's).
        if (req.mode === 'default' && req.instance_id === undefined) await transitionsStore.removeRule(tx, scope);
        else await transitionsStore.putRule(tx, row);
        await recheck(tx, now);
        return { success: true as const, transition: view(row) };
      });
    },

    /** `GET /_emu/transitions`: the rules (the kind's first), the slow-pull windows open now, and the seeded timing. */
    async list() {
      const now = clock.now();
      const rows = await transitionsStore.rules(store.db);
      rows.sort((a, b) => (a.instance_id ?? 0) - (b.instance_id ?? 0) || a.kind.localeCompare(b.kind));
      const slow = await transitionsStore.openSlowPulls(store.db, now);
      return {
        transitions: rows.map(view),
        slow_pulls: slow.map((s) => ({ ref: s.ref, machine_id: s.machine_id, pull_seconds: Number(s.pull_seconds), until: s.until === null ? null : Number(s.until) })),
        default_boot_seconds: { min: config.simBootSeconds.min, max: Math.max(config.simBootSeconds.min, config.simBootSeconds.max) },
      };
    },

    /** `DELETE /_emu/transitions`: every rule (or one instance's) goes; the seeded timing is back. */
    async clear(instanceId?: number): Promise<{ success: true; removed: number }> {
      return instances.write(async (tx) => {
        const removed = await transitionsStore.removeRules(tx, instanceId);
        await recheck(tx, clock.now());
        return { success: true as const, removed };
      });
    },

    /**
     * `POST /_emu/instances/{id}/advance`: the instance's next state now. Its boot's gate (manual, delay) or its image's
     * pull ends now, and its machine's agent passes at once: provisioning → loading (or running) → running; a stop
     * the host has not acted on yet is done. 409 when nothing is pending for it.
     */
    async advance(id: number): Promise<{ success: true; instance_id: number; actual_status: string | null }> {
      return instances.write(async (tx) => {
        const now = clock.now();
        const { inst, machine } = await simulatedMachineOf(tx, id, 'advancing it');
        if (!machine) throw new ApiError('conflict', `instance ${id} is on no machine yet: nothing to advance`);
        if (isSilent(machine.fault)) {
          throw new ApiError('conflict', `machine ${machine.id} is silent (fault ${machine.fault}): recover it first (gpuplane emu fault recover)`);
        }
        // Lock order: the machine's simulated runtime first, as its agent's passes and the faults take it.
        await sim.lockMachine(tx, machine.id);
        const gates = (await simStore.gatesOf(tx, machine.id, id)).filter((g) => g.readyAt !== null && g.readyAt > now);
        const key = pullKey({ image: inst.image, repull: inst.repull === 1, instance_id: inst.id, generation: inst.generation });
        const pull = await simStore.pullReadyAt(tx, machine.id, key);
        const pulling = pull !== undefined && pull !== null && pull > now;
        // A stop shows at once (the control plane's), while the host has yet to stop the container.
        const stopping = inst.intended_status === 'stopped'
          && (await simStore.containers(tx, machine.id)).some((c) => c.instance_id === id && c.status === 'running');
        const settled = inst.intended_status === 'stopped' ? !stopping : inst.actual_status === 'running';
        if (settled || (gates.length === 0 && !pulling && !(await simStore.hasDue(tx, machine.id)))) {
          const why = pull === null ? ': its image pull hangs (fault stall; recover it)' : '';
          throw new ApiError('conflict', `nothing is pending for instance ${id}: it is ${inst.actual_status ?? 'provisioning'}${why}`);
        }
        await simStore.finishNow(tx, machine.id, [...gates.map((g) => g.key), ...(pulling ? [key] : [])], now);
        await sim.step(tx, machine.id, now);
        const after = await instances.find(id, tx);
        return { success: true as const, instance_id: id, actual_status: after?.actual_status ?? null };
      });
    },
  };
}

export type TransitionsService = ReturnType<typeof transitionsServiceFactory>;
