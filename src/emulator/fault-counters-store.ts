import { sql } from 'kysely';
import type { Tx } from '../platform/db/connect.js';

/**
 * Counters of injected emulator faults (`POST /_emu/faults` with `count`). Kept in the database so that every
 * process sharing it sees the same remaining count; taking one is a single conditional UPDATE.
 */
export function faultCounters(db: Tx) {
  return {
    async add(name: string, count: number, tx: Tx = db): Promise<number> {
      const r = await tx
        .insertInto('emu_fault_counters')
        .values({ name, remaining: count })
        .onConflict((oc) => oc.column('name').doUpdateSet({ remaining: sql`emu_fault_counters.remaining + ${sql.lit(count)}` }))
        .returning('remaining')
        .executeTakeFirstOrThrow();
      return r.remaining;
    },
    /** True when a fault of this name was pending (and is now used up by one). */
    async take(name: string, tx: Tx = db): Promise<boolean> {
      const r = await tx
        .updateTable('emu_fault_counters')
        .set({ remaining: sql`remaining - 1` })
        .where('name', '=', name)
        .where('remaining', '>', 0)
        .executeTakeFirst();
      return Number(r.numUpdatedRows) === 1;
    },
  };
}

export type FaultCounters = ReturnType<typeof faultCounters>;
