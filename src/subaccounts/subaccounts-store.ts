import type { Insertable, Selectable } from 'kysely';
import type { Tx } from '../platform/db/connect.js';
import { prepared } from '../platform/db/prepared.js';
import type { SubaccountsTable } from './subaccounts-tables.js';

export type SubaccountRow = Selectable<SubaccountsTable>;

export function subaccountsStore(db: Tx) {
  // Read on every rent (a host-only account may not rent): built once (platform/db/prepared.ts).
  const hostOnly = prepared(['user_id'], (q: { user_id: number }) =>
    db.selectFrom('subaccounts').select('host_only').where('user_id', '=', q.user_id));
  return {
    async insert(row: Insertable<SubaccountsTable>, tx: Tx = db): Promise<SubaccountRow> {
      return tx.insertInto('subaccounts').values(row).returningAll().executeTakeFirstOrThrow();
    },

    async find(userId: number, tx: Tx = db): Promise<SubaccountRow | undefined> {
      return tx.selectFrom('subaccounts').selectAll().where('user_id', '=', userId).executeTakeFirst();
    },

    async isHostOnly(userId: number, tx: Tx = db): Promise<boolean> {
      return (await hostOnly(tx, { user_id: userId })).rows[0]?.host_only === 1;
    },

    /** A parent's subaccounts, oldest first. */
    async listOf(parentId: number, tx: Tx = db): Promise<SubaccountRow[]> {
      return tx.selectFrom('subaccounts').selectAll().where('parent_id', '=', parentId).orderBy('user_id').execute();
    },
  };
}

export type SubaccountsStore = ReturnType<typeof subaccountsStore>;
