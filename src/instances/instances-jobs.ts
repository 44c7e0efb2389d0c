/**
 * The control plane's side of host trouble: a host it no longer hears (its instances `unknown`, then `offline`). Who
 * decides a host is lost is not this feature's business: a heartbeat timeout, or whatever the root wires to
 * `hostLost` and `markLost` (instances-hosts-contract.ts). Whatever the host does to its containers meanwhile, its
 * agent's next report tells (agent-server-observed.ts).
 */
import type { Tx } from '../platform/db/connect.js';
import type { Clock } from '../platform/clock.js';
import type { Scheduler } from '../platform/scheduler.js';
import type { MachinesApi } from '../machines/machines-contract.js';
import { HEARTBEAT_OFFLINE_AFTER_S, JOB_OFFLINE, refOf, type Lifecycle } from './instances-lifecycle.js';
import type { InstanceRow, InstancesStore } from './instances-store.js';

export interface JobsDeps {
  store: InstancesStore;
  lifecycle: Lifecycle;
  fleet: MachinesApi;
  scheduler: Scheduler;
  clock: Clock;
  notify: () => void;
}

export function instanceJobsFactory({ store, lifecycle, fleet, scheduler, clock, notify }: JobsDeps) {
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

  /**
   * A host stopped heartbeating (the heartbeat job calls this once per lost host): its instances turn unknown, then
   * offline. Stopped instances stay stopped; unknown ones keep their running offline timer.
   */
  async function hostLost(tx: Tx, machineId: number): Promise<void> {
    const now = clock.now();
    // Lock order (MachinesApi.lockMachine): the machine's row before its instances, as a destroy there takes them.
    await fleet.lockMachine(tx, machineId);
    for (const row of await store.listOnMachine(machineId, tx)) {
      const inst = await store.lock(row.id, tx);
      if (inst && !['stopped', 'unknown', 'offline'].includes(inst.actual_status ?? '')) await markLost(tx, inst, 'unknown', now);
    }
  }

  return { register, markLost, hostLost };
}
