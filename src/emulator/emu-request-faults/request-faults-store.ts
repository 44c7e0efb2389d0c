import { sql, type Insertable, type Selectable } from 'kysely';
import type { Tx } from '../../platform/db/connect.js';
import type { EmuRequestFaultsTable } from './request-faults-tables.js';

export type RequestFaultRow = Selectable<EmuRequestFaultsTable>;
export type NewRequestFaultRow = Omit<Insertable<EmuRequestFaultsTable>, 'id' | 'matched' | 'fired'>;

/** PostgreSQL returns bigint as text. */
const row = (r: RequestFaultRow): RequestFaultRow => ({ ...r, seed: r.seed === null ? null : Number(r.seed) });

export function requestFaultsStore(db: Tx) {
  return {
    async insert(rule: NewRequestFaultRow, tx: Tx = db): Promise<RequestFaultRow> {
      return row(await tx.insertInto('emu_request_faults').values(rule).returningAll().executeTakeFirstOrThrow());
    },
    /** Every rule, oldest first: the order they are tried in. */
    async list(tx: Tx = db): Promise<RequestFaultRow[]> {
      return (await tx.selectFrom('emu_request_faults').selectAll().orderBy('id').execute()).map(row);
    },
    /** True when the rule existed. */
    async delete(id: number, tx: Tx = db): Promise<boolean> {
      const r = await tx.deleteFrom('emu_request_faults').where('id', '=', id).executeTakeFirst();
      return Number(r.numDeletedRows) === 1;
    },
    /** How many rules there were. */
    async deleteAll(tx: Tx = db): Promise<number> {
      const r = await tx.deleteFrom('emu_request_faults').executeTakeFirst();
      return Number(r.numDeletedRows);
    },
    /**
     * Counts one more request the rule matched and returns its number n (1, 2, …), or undefined when the rule is gone
     * or used up (fired max_count times). One statement: processes sharing the database each get a distinct n.
     */
    async match(id: number, tx: Tx = db): Promise<number | undefined> {
      const r = await tx
        .updateTable('emu_request_faults')
        .set({ matched: sql`matched + 1` })
        .where('id', '=', id)
        .where((eb) => eb.or([eb('max_count', 'is', null), eb('fired', '<', eb.ref('max_count'))]))
        .returning('matched')
        .executeTakeFirst();
      return r?.matched;
    },
    /** Counts one firing; false when the rule is gone or another process used up its count first. */
    async fire(id: number, tx: Tx = db): Promise<boolean> {
      const r = await tx
        .updateTable('emu_request_faults')
        .set({ fired: sql`fired + 1` })
        .where('id', '=', id)
        .where((eb) => eb.or([eb('max_count', 'is', null), eb('fired', '<', eb.ref('max_count'))]))
        .executeTakeFirst();
      return Number(r.numUpdatedRows) === 1;
    },
  };
}

export type RequestFaultsStore = ReturnType<typeof requestFaultsStore>;
