/**
 * SQL of machines whose host is silent (a fault under which it sends nothing: `unknown`, `offline`): when each went
 * silent (`fleet_machines.heartbeat_at`), and which of those holding GPUs crossed a timeout. A healthy host's last
 * beat is not stored (it is now); only the change to silent is (issue 16: an UPDATE of every healthy machine per
 * interval cost 280 ms a run at 20,000 machines on PostgreSQL, `npm run bench -- pg-heartbeat`). The heartbeat that
 * reads these is the emulator's (its simulated hosts'); real hosts' liveness is their agents' reports.
 */
import type { Tx } from '../platform/db/connect.js';

/** Machine faults under which the host sends no heartbeat. */
export const SILENT_FAULTS = ['unknown', 'offline'] as const;

export const isSilent = (fault: string | null) => (SILENT_FAULTS as readonly string[]).includes(fault ?? '');

/** Silent machines whose last beat is at or after `t` (partial index on `fault`: only faulted machines are read). */
const silentSince = (tx: Tx, t: number) =>
  tx.selectFrom('fleet_machines').select('id').where('fault', 'is not', null).where('fault', 'in', [...SILENT_FAULTS]).where('heartbeat_at', '>=', t);

export function silentMachinesStore(db: Tx) {
  return {
    /** The machine went silent at `at` (its last beat), inside the caller's transaction. */
    async wentSilent(tx: Tx, machineId: number, at: number): Promise<void> {
      await tx.updateTable('fleet_machines').set({ heartbeat_at: at }).where('id', '=', machineId).execute();
    },

    /**
     * Silent machines whose last beat is in [since, before) and that hold GPUs of instances, in id order. It writes
     * nothing, so it never waits for a machine another transaction holds.
     */
    async lostBetween(tx: Tx, since: number, before: number): Promise<number[]> {
      const rows = await tx
        .selectFrom('fleet_machines as m')
        .select('m.id')
        .where('m.fault', 'is not', null)
        .where('m.fault', 'in', [...SILENT_FAULTS])
        .where('m.heartbeat_at', '>=', since)
        .where('m.heartbeat_at', '<', before)
        .where((eb) => eb.exists(eb.selectFrom('fleet_gpus as g').select('g.machine_id').whereRef('g.machine_id', '=', 'm.id').where('g.instance_id', 'is not', null)))
        .orderBy('m.id')
        .execute();
      return rows.map((r) => r.id);
    },

    /** Whether some machine went silent at or after `t`. */
    async anySilentSince(tx: Tx, t: number): Promise<boolean> {
      return (await silentSince(tx, t).limit(1).executeTakeFirst()) !== undefined;
    },

    /** The machine's fault and when it went silent, or undefined when there is no such machine. */
    async beatOf(machineId: number): Promise<{ fault: string | null; heartbeat_at: number | null } | undefined> {
      const r = await db.selectFrom('fleet_machines').select(['fault', 'heartbeat_at']).where('id', '=', machineId).executeTakeFirst();
      return r && { fault: r.fault, heartbeat_at: r.heartbeat_at === null ? null : Number(r.heartbeat_at) };
    },
  };
}

export type SilentMachines = ReturnType<typeof silentMachinesStore>;
