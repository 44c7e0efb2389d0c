import type { Insertable, Selectable } from 'kysely';
import type { Tx } from '../platform/db/connect.js';
import type { HostingDefjobsTable } from './hosting-tables.js';

/** The hosting feature's own table: default jobs. */
export function hostingStore(db: Tx) {
  return {
    /**
     * Sets the machine's default job, replacing the one it had (one statement: two racing requests both succeed, one
     * after the other, as it locks the row). What runs it (`instance_id`) stays, for the caller to end.
     */
    async putDefjob(tx: Tx, row: Insertable<HostingDefjobsTable>): Promise<void> {
      const { machine_id: _machine, instance_id: _instance, status_msg: _status, ...rest } = row;
      await tx.insertInto('hosting_defjobs').values(row).onConflict((oc) => oc.column('machine_id').doUpdateSet(rest)).execute();
    },

    /**
     * The machine's default job, if it has one, its row locked until `tx` ends (a no-op update, which locks on both
     * databases): whoever places or ends its instance holds it, so two never both do.
     */
    async defjobOf(tx: Tx, machineId: number): Promise<Selectable<HostingDefjobsTable> | undefined> {
      return tx.updateTable('hosting_defjobs').set((eb) => ({ machine_id: eb.ref('machine_id') })).where('machine_id', '=', machineId)
        .returningAll().executeTakeFirst();
    },

    /** Records whether the default job runs: its instance, or why none. */
    async setDefjobRun(tx: Tx, machineId: number, run: { instance_id: number | null; status_msg: string | null }): Promise<void> {
      await tx.updateTable('hosting_defjobs').set(run).where('machine_id', '=', machineId).execute();
    },

    /** The default jobs' instances among the machines' (they are the host's own, not clients'). */
    async defjobInstances(machineIds: readonly number[], tx: Tx = db): Promise<Set<number>> {
      if (!machineIds.length) return new Set();
      const rows = await tx.selectFrom('hosting_defjobs').select('instance_id').where('machine_id', 'in', [...machineIds]).where('instance_id', 'is not', null).execute();
      return new Set(rows.map((r) => r.instance_id!));
    },

    /** Removes the machine's default job; false when it had none. */
    async removeDefjob(tx: Tx, machineId: number): Promise<boolean> {
      const r = await tx.deleteFrom('hosting_defjobs').where('machine_id', '=', machineId).executeTakeFirst();
      return Number(r.numDeletedRows) > 0;
    },

    /** The machines among `machineIds` that have a default job. */
    async withDefjob(machineIds: readonly number[], tx: Tx = db): Promise<Set<number>> {
      if (!machineIds.length) return new Set();
      const out = new Set<number>();
      for (let i = 0; i < machineIds.length; i += 500) {
        const rows = await tx.selectFrom('hosting_defjobs').select('machine_id').where('machine_id', 'in', machineIds.slice(i, i + 500)).execute();
        for (const r of rows) out.add(r.machine_id);
      }
      return out;
    },
  };
}

export type HostingStore = ReturnType<typeof hostingStore>;
