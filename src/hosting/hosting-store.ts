import type { Insertable } from 'kysely';
import type { Tx } from '../platform/db/connect.js';
import type { HostingDefjobsTable } from './hosting-tables.js';

/** The hosting feature's own table: default jobs. */
export function hostingStore(db: Tx) {
  return {
    /** Sets the machine's default job, replacing the one it had (one statement: two racing requests both succeed). */
    async putDefjob(tx: Tx, row: Insertable<HostingDefjobsTable>): Promise<void> {
      const { machine_id: _machine, ...rest } = row;
      await tx.insertInto('hosting_defjobs').values(row).onConflict((oc) => oc.column('machine_id').doUpdateSet(rest)).execute();
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
