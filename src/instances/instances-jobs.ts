/**
 * The control plane's side of host trouble: a host lost (heartbeat timeout: instances `unknown`, then `offline`), and
 * the emulator's instance and machine faults (contract §2: exited, unknown, offline, stall, recover, no_heartbeat).
 * A fault is a fault of a simulated host (src/emulator/simulated-hosts/, SimHostPort): `exited` crashes its containers and `stall`
 * hangs its pulls, and its agent's report then moves the instances (exited; loading); `unknown` and `offline` silence
 * its agent, and the control plane marks the instances as for any host it no longer hears; `recover` makes the host
 * behave again, and its agent's report brings the instances back, with their containers, as a real host coming back.
 */
import type { Db, Tx } from '../platform/db/connect.js';
import { ApiError } from '../platform/errors.js';
import type { Clock } from '../platform/clock.js';
import type { Scheduler } from '../platform/scheduler.js';
import type { FleetApi } from '../machines/machines-contract.js';
import type { FaultRequest } from '../platform/faults.js';
import { HEARTBEAT_OFFLINE_AFTER_S, JOB_OFFLINE, refOf, type Lifecycle } from './instances-lifecycle.js';
import type { SimHostPort } from './instances-ports.js';
import type { InstanceRow, InstancesStore } from './instances-store.js';
import { transact } from './instances-batch.js';

/**
 * `no_heartbeat` (machines only): the host goes silent and the control plane notices only when the heartbeat timeout
 * passes (fleet-heartbeat.ts). `unknown` on a machine is the same host condition, already noticed: its instances turn
 * unknown at once.
 */
export const INSTANCE_FAULTS = ['exited', 'unknown', 'offline', 'stall', 'recover', 'no_heartbeat'] as const;
export type InstanceFault = (typeof INSTANCE_FAULTS)[number];

/** Faults of a host's container runtime: only a simulated host's can be made to misbehave. */
const RUNTIME_FAULTS: readonly InstanceFault[] = ['exited', 'stall'];
/** The states `recover` on a machine brings back (its reply lists those instances). */
const RECOVERABLE = ['exited', 'unknown', 'offline', 'loading'];

export interface JobsDeps {
  db: Db;
  store: InstancesStore;
  lifecycle: Lifecycle;
  fleet: FleetApi;
  scheduler: Scheduler;
  clock: Clock;
  notify: () => void;
}

export function instanceJobsFactory({ db, store, lifecycle, fleet, scheduler, clock, notify }: JobsDeps) {
  let simHost: SimHostPort | undefined;

  function register(): void {
    scheduler.register(JOB_OFFLINE, async ({ id }: { id: number }, { tx, now }) => {
      const inst = await store.lock(id, tx);
      if (inst && inst.actual_status === 'unknown') {
        await lifecycle.halt(tx, inst, now, { actual_status: 'offline', status_msg: 'host disconnected' }, true);
      }
    });
    scheduler.afterJob.push((kind) => {
      if (kind.startsWith('instance.')) notify();
    });
  }

  /** The control plane stops hearing from the instance's host: `unknown` (then `offline` after a while) or `offline`. */
  async function markLost(tx: Tx, inst: InstanceRow, to: 'unknown' | 'offline', now: number): Promise<void> {
    if (to === 'offline') {
      await lifecycle.halt(tx, inst, now, { actual_status: 'offline', status_msg: 'host disconnected' }, true);
      return;
    }
    await lifecycle.halt(tx, inst, now, { actual_status: 'unknown', status_msg: 'no heartbeat from host' }, true);
    await scheduler.schedule(JOB_OFFLINE, now + HEARTBEAT_OFFLINE_AFTER_S, { id: inst.id }, { tx, ref: refOf(inst.id) });
  }

  /** The simulated host of the machine, or undefined for a real host's (run by `gpuplane agent`). */
  async function simulatedHost(machineId: number | null, tx: Tx, fault: InstanceFault): Promise<SimHostPort | undefined> {
    const machine = machineId === null ? undefined : await fleet.machine(machineId, tx);
    const sim = machine && !machine.agent ? simHost : undefined;
    if (!sim && RUNTIME_FAULTS.includes(fault)) {
      throw new ApiError('conflict', `fault ${fault} acts on a simulated host's container runtime; machine ${machineId} is run by a real host (gpuplane agent)`);
    }
    return sim;
  }

  async function onInstance(tx: Tx, id: number, name: InstanceFault, now: number): Promise<Record<string, unknown>> {
    const found = await store.find(id, tx);
    if (!found) throw new ApiError('not_found', `instance ${id} not found`);
    const sim = await simulatedHost(found.machine_id, tx, name);
    // Lock order: the machine's simulated runtime, then the machine's row (FleetApi.lockMachine), before any instance
    // row, as its agent's passes and a destroy there take them.
    if (sim) await sim.lockMachine(tx, found.machine_id!);
    if (found.machine_id !== null) await fleet.lockMachine(tx, found.machine_id);
    const inst = await store.lock(id, tx);
    if (!inst) throw new ApiError('not_found', `instance ${id} not found`);
    const machineId = inst.machine_id!;
    switch (name) {
      case 'exited':
      case 'stall':
        await sim!.fault(tx, machineId, name, [inst], now);
        await sim!.step(tx, machineId, now);
        break;
      case 'unknown':
      case 'offline':
        await sim?.fault(tx, machineId, 'silent', [inst], now);
        await markLost(tx, inst, name, now);
        break;
      case 'recover':
        if (sim) {
          await sim.fault(tx, machineId, 'recover', [inst], now);
          await sim.step(tx, machineId, now);
        }
        break;
    }
    return { instance_id: inst.id };
  }

  async function onMachine(tx: Tx, machineId: number, name: InstanceFault, now: number): Promise<Record<string, unknown>> {
    if (!(await fleet.machine(machineId, tx))) throw new ApiError('not_found', `machine ${machineId} not found`);
    const sim = await simulatedHost(machineId, tx, name);
    if (sim) await sim.lockMachine(tx, machineId);
    if (name === 'no_heartbeat') {
      // Silent host: instances change only when the heartbeat job finds the host past its timeout (hostLost).
      await fleet.setMachineFault(tx, machineId, 'unknown');
      return { machine_id: machineId, instance_ids: [] };
    }
    await fleet.setMachineFault(tx, machineId, name === 'recover' ? null : name);
    const all = await store.listOnMachine(machineId, tx);
    // Stopped instances (by the user) are left alone by machine faults; recover lists those it brings back.
    const affected: InstanceRow[] = [];
    for (const row of all) {
      if (name === 'recover' ? !RECOVERABLE.includes(row.actual_status ?? '') : row.actual_status === 'stopped') continue;
      const inst = await store.lock(row.id, tx);
      if (inst) affected.push(inst);
    }
    switch (name) {
      case 'exited':
      case 'stall':
        await sim!.fault(tx, machineId, name, affected, now, true);
        await sim!.step(tx, machineId, now);
        break;
      case 'unknown':
      case 'offline':
        // The machine's fault silences its agent; the control plane marks its instances.
        for (const inst of affected) await markLost(tx, inst, name, now);
        break;
      case 'recover':
        if (sim) {
          await sim.fault(tx, machineId, 'recover', all, now, true);
          await sim.step(tx, machineId, now);
        }
        break;
    }
    return { machine_id: machineId, instance_ids: affected.map((i) => i.id) };
  }

  /** `POST /_emu/faults` for an instance or a machine. */
  async function fault(req: FaultRequest): Promise<Record<string, unknown>> {
    const name = req.fault as InstanceFault;
    if ((req.instance_id === undefined) === (req.machine_id === undefined)) {
      throw new ApiError('bad_request', `body: fault ${name} needs exactly one of instance_id or machine_id`);
    }
    if (name === 'no_heartbeat' && req.machine_id === undefined) {
      throw new ApiError('bad_request', 'body: fault no_heartbeat applies to a machine (machine_id); hosts heartbeat, not instances');
    }
    const out = await transact(db, async (tx) => {
      const now = clock.now();
      return req.instance_id !== undefined ? onInstance(tx, req.instance_id, name, now) : onMachine(tx, req.machine_id!, name, now);
    });
    notify();
    return out;
  }

  /**
   * A host stopped heartbeating (the fleet's heartbeat job calls this once per lost host): its instances turn unknown,
   * then offline. Stopped instances stay stopped; unknown ones keep their running offline timer.
   */
  async function hostLost(tx: Tx, machineId: number): Promise<void> {
    const now = clock.now();
    // Lock order (FleetApi.lockMachine): the machine's row before its instances, as a destroy there takes them.
    await fleet.lockMachine(tx, machineId);
    for (const row of await store.listOnMachine(machineId, tx)) {
      const inst = await store.lock(row.id, tx);
      if (inst && !['stopped', 'unknown', 'offline'].includes(inst.actual_status ?? '')) await markLost(tx, inst, 'unknown', now);
    }
  }

  return {
    register,
    fault,
    hostLost,
    /** The emulator's simulated hosts, where the faults act (wired by the root in emulator mode). */
    useSimHost(port: SimHostPort): void {
      simHost = port;
    },
  };
}
