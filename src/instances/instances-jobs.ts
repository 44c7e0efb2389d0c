/**
 * Background work of the simulated hosts (boot progress, heartbeat loss) and the emulator's instance and machine
 * faults (contract §2: exited, unknown, offline, stall, recover).
 */
import type { Db, Tx } from '../platform/db/connect.js';
import { ApiError } from '../platform/errors.js';
import type { Clock } from '../platform/clock.js';
import type { Scheduler } from '../platform/scheduler.js';
import type { FleetApi } from '../fleet/fleet-contract.js';
import type { FaultRequest } from '../platform/faults.js';
import { HEARTBEAT_OFFLINE_AFTER_S, JOB_BOOT, JOB_OFFLINE, refOf, type Lifecycle } from './instances-lifecycle.js';
import type { InstanceRow, InstancesStore } from './instances-store.js';
import { transact } from './instances-batch.js';

/**
 * `no_heartbeat` (machines only): the host goes silent and the control plane notices only when the heartbeat timeout
 * passes (fleet-heartbeat.ts). `unknown` on a machine is the same host condition, already noticed: its instances turn
 * unknown at once.
 */
export const INSTANCE_FAULTS = ['exited', 'unknown', 'offline', 'stall', 'recover', 'no_heartbeat'] as const;
export type InstanceFault = (typeof INSTANCE_FAULTS)[number];

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
  const meantToRun = (i: InstanceRow) => i.intended_status === 'running';

  function register(): void {
    scheduler.register(JOB_BOOT, async (_payload: unknown, { tx, now }) => lifecycle.bootStep(tx, now));
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

  /** One instance into a fault condition. Stopped instances (by the user) are left alone by machine faults. */
  async function applyToInstance(tx: Tx, inst: InstanceRow, fault: InstanceFault, now: number): Promise<void> {
    switch (fault) {
      case 'exited':
        await lifecycle.halt(tx, inst, now, { actual_status: 'exited', status_msg: 'container exited' }, true);
        return;
      case 'unknown':
        await lifecycle.halt(tx, inst, now, { actual_status: 'unknown', status_msg: 'no heartbeat from host' }, true);
        await scheduler.schedule(JOB_OFFLINE, now + HEARTBEAT_OFFLINE_AFTER_S, { id: inst.id }, { tx, ref: refOf(inst.id) });
        return;
      case 'offline':
        await lifecycle.halt(tx, inst, now, { actual_status: 'offline', status_msg: 'host disconnected' }, true);
        return;
      case 'stall':
        await lifecycle.halt(tx, inst, now, { actual_status: 'loading', status_msg: 'image download stalled' }, true);
        return;
      case 'recover':
        if (!['exited', 'unknown', 'offline', 'loading'].includes(inst.actual_status ?? '')) return;
        if (!meantToRun(inst) || (JSON.parse(inst.gpu_indexes) as number[]).length === 0) return;
        await lifecycle.boot(tx, inst, now, 'recovered');
        return;
    }
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
      if (req.instance_id !== undefined) {
        const inst = await store.lock(req.instance_id, tx);
        if (!inst) throw new ApiError('not_found', `instance ${req.instance_id} not found`);
        await applyToInstance(tx, inst, name, now);
        return { instance_id: inst.id };
      }
      const machineId = req.machine_id!;
      if (!(await fleet.machine(machineId, tx))) throw new ApiError('not_found', `machine ${machineId} not found`);
      if (name === 'no_heartbeat') {
        // Silent host: instances change only when the heartbeat job finds the host past its timeout (hostLost).
        await fleet.setMachineFault(tx, machineId, 'unknown');
        return { machine_id: machineId, instance_ids: [] };
      }
      await fleet.setMachineFault(tx, machineId, name === 'recover' ? null : name);
      const affected: number[] = [];
      for (const row of await store.listOnMachine(machineId, tx)) {
        const inst = await store.lock(row.id, tx);
        if (!inst || (inst.actual_status === 'stopped' && name !== 'recover')) continue;
        if (name === 'recover' && !['exited', 'unknown', 'offline', 'loading'].includes(inst.actual_status ?? '')) continue;
        await applyToInstance(tx, inst, name, now);
        affected.push(inst.id);
      }
      return { machine_id: machineId, instance_ids: affected };
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
      if (inst && !['stopped', 'unknown', 'offline'].includes(inst.actual_status ?? '')) await applyToInstance(tx, inst, 'unknown', now);
    }
  }

  return { register, fault, hostLost };
}
