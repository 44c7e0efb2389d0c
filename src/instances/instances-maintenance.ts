/**
 * A host's maintenance window stops the instances on its machine with notice (issue 33 item 3): when the window
 * begins (a hosting job), each instance meant to run is stopped as an outbid one is (intended_status stays running,
 * compute billing stops), keeping its GPUs, its container told why and when (SIGTERM, then SIGKILL after the
 * operator's grace: instances-lifecycle stopNoticeMsg); when the window ends, or is cancelled, they boot again. The
 * host's own work on the machine then finds its renters' programs stopped cleanly rather than killed.
 */
import type { Tx } from '../platform/db/connect.js';
import type { MaintWindow } from '../machines/machines-offers-contract.js';
import type { MachinesApi } from '../machines/machines-contract.js';
import { MAINT_STOP_PREFIX, wantsRunning, type Lifecycle } from './instances-lifecycle.js';
import type { InstancesStore } from './instances-store.js';

/** Why a running instance stops for a window: `host maintenance from <start> for <hours> hours (<category>)`. */
export function maintenanceMsg(w: Pick<MaintWindow, 'start' | 'hours' | 'category'>): string {
  const start = new Date(Math.floor(w.start) * 1000).toISOString().replace(/\.000Z$/, 'Z');
  return `${MAINT_STOP_PREFIX} from ${start} for ${w.hours} hours (${w.category}); it starts again when the window ends`;
}

export const MAINT_RESUMED_MSG = 'resumed: the host\'s scheduled downtime is over';

export function instancesMaintenance({ store, lifecycle, fleet }: { store: InstancesStore; lifecycle: Lifecycle; fleet: Pick<MachinesApi, 'lockMachine'> }) {
  return {
    /** The window began: the machine's instances meant to run are stopped with notice. Returns how many. */
    async begin(tx: Tx, machineId: number, w: MaintWindow, at: number): Promise<number> {
      // The machine's row first, as every transaction that moves its instances takes it (MachinesApi.lockMachine).
      await fleet.lockMachine(tx, machineId);
      let n = 0;
      for (const row of await store.listOnMachine(machineId, tx)) {
        if (!wantsRunning(row)) continue;
        const inst = await store.lock(row.id, tx);
        if (!inst || !wantsRunning(inst)) continue;
        const why = maintenanceMsg(w);
        await lifecycle.halt(tx, inst, at, { actual_status: 'stopped', intended_status: 'running', status_msg: lifecycle.noticeOf(inst, why, at) ?? why }, true);
        n++;
      }
      return n;
    },
    /** The window ended (or was cancelled): the instances it stopped, still holding their GPUs, boot again. */
    async end(tx: Tx, machineId: number, at: number): Promise<number> {
      await fleet.lockMachine(tx, machineId);
      let n = 0;
      for (const row of await store.listOnMachine(machineId, tx)) {
        if (!stoppedForMaintenance(row)) continue;
        const inst = await store.lock(row.id, tx);
        if (!inst || !stoppedForMaintenance(inst) || (JSON.parse(inst.gpu_indexes) as number[]).length === 0) continue;
        await lifecycle.boot(tx, inst, at, MAINT_RESUMED_MSG);
        n++;
      }
      return n;
    },
  };
}

const stoppedForMaintenance = (r: { actual_status: string | null; intended_status: string; status_msg: string | null }) =>
  r.actual_status === 'stopped' && r.intended_status === 'running' && (r.status_msg?.startsWith(MAINT_STOP_PREFIX) ?? false);

export type InstancesMaintenance = ReturnType<typeof instancesMaintenance>;
