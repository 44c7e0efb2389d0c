/** The `sessions` table: one row per login session, beside its session key (an `api_keys` row of kind `session`). */
import type { Db, Tx } from '../platform/db/connect.js';

export interface NewSession {
  key_id: number;
  user_id: number;
  client: string;
  created_at: number;
  expires_at: number;
}

export function sessionsStore(db: Db) {
  return {
    async insert(row: NewSession, tx: Tx = db): Promise<void> {
      await tx.insertInto('sessions').values(row).execute();
    },

    /** Which of `keyIds` are sessions of `userId`. */
    async keyIdsOf(userId: number, keyIds: readonly number[]): Promise<number[]> {
      if (keyIds.length === 0) return [];
      return (await db.selectFrom('sessions').select('key_id').where('user_id', '=', userId).where('key_id', 'in', [...keyIds]).execute()).map((r) => r.key_id);
    },

    /** The sessions of `userId` among `keyIds` that have not expired at `now`, newest first. */
    async unexpired(userId: number, keyIds: readonly number[], now: number) {
      if (keyIds.length === 0) return [];
      return db
        .selectFrom('sessions')
        .select(['key_id', 'client', 'created_at', 'expires_at'])
        .where('user_id', '=', userId)
        .where('key_id', 'in', [...keyIds])
        .where('expires_at', '>', now)
        .orderBy('created_at', 'desc')
        .orderBy('key_id', 'desc')
        .execute();
    },
  };
}
