import type { Tx } from '../platform/db/connect.js';
import type { ApiKeysTable, UsersTable } from '../platform/db/schema.js';
import type { InferResult, Selectable } from 'kysely';

export type KeyRow = Selectable<ApiKeysTable>;
export type UserRow = Selectable<UsersTable>;

export interface NewKey {
  user_id: number;
  key_hash: string;
  kind: 'user' | 'session' | 'instance';
  name?: string | null;
  permissions?: string | null;
  team_id?: number | null;
  instance_id?: number | null;
  is_bootstrap?: boolean;
  created_at: number;
}

/** The live (not revoked) key with this hash, joined to its user. */
function lookupByHash(db: Tx, hash: string) {
  return db
    .selectFrom('api_keys as k')
    .innerJoin('users as u', 'u.id', 'k.user_id')
    .select([
      'k.id as k_id', 'k.user_id as k_user_id', 'k.team_id as k_team_id', 'k.name as k_name',
      'k.key_hash as k_key_hash', 'k.kind as k_kind', 'k.permissions as k_permissions',
      'k.instance_id as k_instance_id', 'k.is_bootstrap as k_is_bootstrap', 'k.created_at as k_created_at',
      'k.last_used_at as k_last_used_at', 'k.revoked_at as k_revoked_at',
      'u.id', 'u.email', 'u.full_name', 'u.password_hash', 'u.credit_micro', 'u.ssh_key', 'u.is_admin',
      'u.email_verified_at', 'u.tfa_status', 'u.phone_number', 'u.created_at',
    ])
    .where('k.key_hash', '=', hash)
    .where('k.revoked_at', 'is', null);
}

type LiveRow = InferResult<ReturnType<typeof lookupByHash>>[number];

export function keysStore(db: Tx) {
  let liveByHash: ReturnType<ReturnType<typeof lookupByHash>['compile']> | undefined;
  return {
    async insert(k: NewKey, tx: Tx = db): Promise<KeyRow> {
      return tx
        .insertInto('api_keys')
        .values({
          user_id: k.user_id,
          key_hash: k.key_hash,
          kind: k.kind,
          name: k.name ?? null,
          permissions: k.permissions ?? null,
          team_id: k.team_id ?? null,
          instance_id: k.instance_id ?? null,
          is_bootstrap: k.is_bootstrap ? 1 : 0,
          created_at: k.created_at,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
    },

    /** The live (not revoked) key with this hash, and its user, in one query: the hot path of every request. */
    async findLiveByHash(hash: string, tx: Tx = db): Promise<{ key: KeyRow; user: UserRow } | undefined> {
      // Building this query costs several times what running it does, and it runs on every request: it is built
      // and compiled once, then run with the digest as its one parameter.
      liveByHash ??= lookupByHash(db, '').compile();
      const row = (await tx.executeQuery<LiveRow>({ ...liveByHash, parameters: [hash] })).rows[0];
      if (!row) return undefined;
      const key: KeyRow = {
        id: row.k_id, user_id: row.k_user_id, team_id: row.k_team_id, name: row.k_name, key_hash: row.k_key_hash,
        kind: row.k_kind, permissions: row.k_permissions, instance_id: row.k_instance_id,
        is_bootstrap: row.k_is_bootstrap, created_at: row.k_created_at, last_used_at: row.k_last_used_at,
        revoked_at: row.k_revoked_at,
      };
      const user: UserRow = {
        id: row.id, email: row.email, full_name: row.full_name, password_hash: row.password_hash,
        credit_micro: row.credit_micro, ssh_key: row.ssh_key, is_admin: row.is_admin,
        email_verified_at: row.email_verified_at, tfa_status: row.tfa_status, phone_number: row.phone_number,
        created_at: row.created_at,
      };
      return { key, user };
    },

    async touch(id: number, now: number, tx: Tx = db): Promise<void> {
      await tx.updateTable('api_keys').set({ last_used_at: now }).where('id', '=', id).execute();
    },

    async revoke(id: number, now: number, tx: Tx = db): Promise<void> {
      await tx.updateTable('api_keys').set({ revoked_at: now }).where('id', '=', id).where('revoked_at', 'is', null).execute();
    },

    async listByUser(userId: number, tx: Tx = db): Promise<KeyRow[]> {
      return tx.selectFrom('api_keys').selectAll().where('user_id', '=', userId).where('revoked_at', 'is', null).orderBy('id').execute();
    },

    async findById(id: number, tx: Tx = db): Promise<KeyRow | undefined> {
      return tx.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
    },

    /** A user's live API keys (kind `user`; sessions and instance keys are not managed here), optionally one team's. */
    async listApiKeys(userId: number, teamId: number | undefined, tx: Tx = db): Promise<KeyRow[]> {
      let q = tx.selectFrom('api_keys').selectAll().where('user_id', '=', userId).where('kind', '=', 'user').where('revoked_at', 'is', null);
      if (teamId !== undefined) q = q.where('team_id', '=', teamId);
      return q.orderBy('id').execute();
    },

    /** Revokes every live key acting for a team: one member's (they left) or everyone's (the team is deleted). */
    async revokeByTeam(teamId: number, userId: number | null, now: number, tx: Tx = db): Promise<void> {
      let q = tx.updateTable('api_keys').set({ revoked_at: now }).where('team_id', '=', teamId).where('revoked_at', 'is', null);
      if (userId !== null) q = q.where('user_id', '=', userId);
      await q.execute();
    },
  };
}

export type KeysStore = ReturnType<typeof keysStore>;
