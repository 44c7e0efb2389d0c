import type { Selectable } from 'kysely';
import type { Tx } from '../platform/db/connect.js';
import { prepared } from '../platform/db/prepared.js';
import type { EnvVarsTable } from './env-vars-tables.js';

export type EnvVarRow = Selectable<EnvVarsTable>;

export function envVarsStore(db: Tx) {
  // Read by every rent (platform/db/prepared.ts).
  const listOf = prepared(['owner'], (q: { owner: string }) => db.selectFrom('env_vars').selectAll().where('owner', '=', q.owner).orderBy('name'));
  return {
    async list(owner: string, tx: Tx = db): Promise<EnvVarRow[]> {
      return (await listOf(tx, { owner })).rows;
    },

    async count(owner: string, tx: Tx = db): Promise<number> {
      const r = await tx.selectFrom('env_vars').select((eb) => eb.fn.countAll<number>().as('n')).where('owner', '=', owner).executeTakeFirstOrThrow();
      return Number(r.n);
    },

    /** Inserts the variable; false when the owner already has one of that name (the unique index decides races). */
    async insert(row: { owner: string; user_id: number; name: string; value_sealed: string; now: number }, tx: Tx = db): Promise<boolean> {
      const r = await tx
        .insertInto('env_vars')
        .values({ owner: row.owner, user_id: row.user_id, name: row.name, value_sealed: row.value_sealed, created_at: row.now, updated_at: row.now })
        .onConflict((oc) => oc.columns(['owner', 'name']).doNothing())
        .executeTakeFirst();
      return Number(r.numInsertedOrUpdatedRows ?? 0) > 0;
    },

    async update(owner: string, name: string, set: { user_id: number; value_sealed: string; now: number }, tx: Tx = db): Promise<boolean> {
      const r = await tx
        .updateTable('env_vars')
        .set({ user_id: set.user_id, value_sealed: set.value_sealed, updated_at: set.now })
        .where('owner', '=', owner)
        .where('name', '=', name)
        .executeTakeFirst();
      return Number(r.numUpdatedRows) > 0;
    },

    async remove(owner: string, name: string, tx: Tx = db): Promise<boolean> {
      const r = await tx.deleteFrom('env_vars').where('owner', '=', owner).where('name', '=', name).executeTakeFirst();
      return Number(r.numDeletedRows) > 0;
    },
  };
}

export type EnvVarsStore = ReturnType<typeof envVarsStore>;
