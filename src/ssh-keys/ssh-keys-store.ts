import type { Selectable } from 'kysely';
import { usersContract } from '../users/users-contract.js';
import type { Tx } from '../platform/db/connect.js';
import type { SshKeysTable } from './ssh-keys-tables.js';

export type SshKeyRow = Selectable<SshKeysTable>;

export function sshKeysStore(db: Tx) {
  return {
    async insert(userId: number, publicKey: string, now: number, tx: Tx = db): Promise<SshKeyRow> {
      return tx
        .insertInto('ssh_keys')
        .values({ user_id: userId, public_key: publicKey, created_at: now, updated_at: now })
        .returningAll()
        .executeTakeFirstOrThrow();
    },

    async listByUser(userId: number, tx: Tx = db): Promise<SshKeyRow[]> {
      return tx.selectFrom('ssh_keys').selectAll().where('user_id', '=', userId).orderBy('id', 'asc').execute();
    },

    /** The keys of all these users, by user then id (oldest first). */
    async listByUsers(userIds: readonly number[], tx: Tx = db): Promise<SshKeyRow[]> {
      if (userIds.length === 0) return [];
      return tx.selectFrom('ssh_keys').selectAll().where('user_id', 'in', [...userIds]).orderBy('user_id').orderBy('id', 'asc').execute();
    },

    async get(userId: number, id: number, tx: Tx = db): Promise<SshKeyRow | undefined> {
      return tx.selectFrom('ssh_keys').selectAll().where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
    },

    async update(userId: number, id: number, publicKey: string, now: number, tx: Tx = db): Promise<SshKeyRow | undefined> {
      return tx
        .updateTable('ssh_keys')
        .set({ public_key: publicKey, updated_at: now })
        .where('id', '=', id)
        .where('user_id', '=', userId)
        .returningAll()
        .executeTakeFirst();
    },

    async remove(userId: number, id: number, tx: Tx = db): Promise<boolean> {
      const r = await tx.deleteFrom('ssh_keys').where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
      return Number(r.numDeletedRows) > 0;
    },

    /**
     * Serialises one user's key changes on PostgreSQL (duplicate check, limit and the user's `ssh_key` stay
     * consistent under concurrent requests); SQLite transactions are serial already.
     */
    async lockUser(userId: number, dialect: 'sqlite' | 'postgres', tx: Tx): Promise<void> {
      await usersContract.lock(tx, userId, dialect);
    },

    /**
     * Keeps the user object's `ssh_key` (spec: "Registered SSH public key") equal to the most recently registered
     * key, or null when none is left. This feature is the only writer of that column.
     */
    async syncUserSshKey(userId: number, tx: Tx = db): Promise<void> {
      const latest = await tx
        .selectFrom('ssh_keys')
        .select('public_key')
        .where('user_id', '=', userId)
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(1)
        .executeTakeFirst();
      await usersContract.setSshKey(tx, userId, latest?.public_key ?? null);
    },
  };
}

export type SshKeysStore = ReturnType<typeof sshKeysStore>;
