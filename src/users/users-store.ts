import type { Insertable, Selectable } from 'kysely';
import { sql } from 'kysely';
import type { Tx } from '../platform/db/connect.js';
import type { DialectName } from '../platform/db/migrations.js';
import type { UsersTable } from './users-tables.js';

export type UserRow = Selectable<UsersTable>;

export function usersStore(db: Tx) {
  return {
    async insert(user: Insertable<UsersTable>, tx: Tx = db): Promise<UserRow> {
      return tx.insertInto('users').values(user).returningAll().executeTakeFirstOrThrow();
    },
    /** Inserts unless the e-mail is taken; returns the row, or undefined when it existed (races between processes). */
    async insertIfAbsent(user: Insertable<UsersTable>, tx: Tx = db): Promise<UserRow | undefined> {
      return tx
        .insertInto('users')
        .values(user)
        .onConflict((oc) => oc.column('email').doNothing())
        .returningAll()
        .executeTakeFirst();
    },
    async findById(id: number, tx: Tx = db): Promise<UserRow | undefined> {
      return tx.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
    },
    async findByEmail(email: string, tx: Tx = db): Promise<UserRow | undefined> {
      return tx.selectFrom('users').selectAll().where(sql`lower(email)`, '=', email.toLowerCase()).executeTakeFirst();
    },
    /** The owner account if it is still an admin, else the oldest admin. */
    async firstAdmin(ownerEmail: string, tx: Tx = db): Promise<UserRow | undefined> {
      return tx
        .selectFrom('users')
        .selectAll()
        .where('is_admin', '=', 1)
        .orderBy(sql`case when email = ${ownerEmail} then 0 else 1 end`)
        .orderBy('id')
        .executeTakeFirst();
    },
    async count(tx: Tx = db): Promise<number> {
      const r = await tx.selectFrom('users').select(sql<number>`count(*)`.as('n')).executeTakeFirstOrThrow();
      return Number(r.n);
    },
  };
}

export type UsersStore = ReturnType<typeof usersStore>;

/**
 * The statements other features run on `users` in their own transaction (users-contract.ts says who uses which and
 * why): each takes the caller's `tx` first.
 */
export const usersInTransaction = {
  /** Login: the e-mail address is verified (the first time only). */
  async setEmailVerified(tx: Tx, userId: number, now: number): Promise<void> {
    await tx.updateTable('users').set({ email_verified_at: now }).where('id', '=', userId).where('email_verified_at', 'is', null).execute();
  },

  /** Login: a new password hash (a change, a reset, `gpuplane admin set-password`), or null for none. */
  async setPasswordHash(tx: Tx, userId: number, hash: string | null): Promise<void> {
    await tx.updateTable('users').set({ password_hash: hash }).where('id', '=', userId).execute();
  },

  /**
   * Login: a sign-up takes over an unverified account of its address (login's email-verify.ts): its password and name
   * replace the earlier sign-up's. False when the address was verified meanwhile (then nothing changes).
   */
  async takeOverUnverified(tx: Tx, userId: number, set: { password_hash: string; full_name: string }): Promise<boolean> {
    const r = await tx.updateTable('users').set(set).where('id', '=', userId).where('email_verified_at', 'is', null).executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  },

  /** 2FA: the user's 2FA status. */
  async setTfaStatus(tx: Tx, userId: number, status: 'enabled' | 'disabled' | 'legacy'): Promise<void> {
    await tx.updateTable('users').set({ tfa_status: status }).where('id', '=', userId).execute();
  },

  /** SSH keys: the user object's `ssh_key`, the most recently registered key or null. */
  async setSshKey(tx: Tx, userId: number, publicKey: string | null): Promise<void> {
    await tx.updateTable('users').set({ ssh_key: publicKey }).where('id', '=', userId).execute();
  },

  /** Billing: adds to (or, negative, takes from) the stored credit; the new credit, or undefined without the user. */
  async adjustCredit(tx: Tx, userId: number, deltaMicro: number): Promise<number | undefined> {
    const row = await tx
      .updateTable('users')
      .set((eb) => ({ credit_micro: eb(eb.ref('credit_micro'), '+', deltaMicro) }))
      .where('id', '=', userId)
      .returning('credit_micro')
      .executeTakeFirst();
    return row?.credit_micro;
  },

  /** Billing: the stored credit. */
  async creditOf(tx: Tx, userId: number): Promise<number | undefined> {
    const row = await tx.selectFrom('users').select('credit_micro').where('id', '=', userId).executeTakeFirst();
    return row?.credit_micro;
  },

  /** Serializes work on one user's rows (PostgreSQL row lock; SQLite transactions are serial already). */
  async lock(tx: Tx, userId: number, dialect: DialectName): Promise<void> {
    if (dialect === 'postgres') await tx.selectFrom('users').select('id').where('id', '=', userId).forUpdate().execute();
  },

  /** The user row (e.g. the owner the serverless autoscaler acts as). */
  async byId(tx: Tx, userId: number): Promise<Selectable<UsersTable> | undefined> {
    return tx.selectFrom('users').selectAll().where('id', '=', userId).executeTakeFirst();
  },

  /** The emulator's reset: the users kept across it, read before and written back after the tables are emptied. */
  async usersByIds(tx: Tx, ids: number[]): Promise<Selectable<UsersTable>[]> {
    return ids.length ? tx.selectFrom('users').selectAll().where('id', 'in', ids).execute() : [];
  },
  async restore(tx: Tx, rows: Insertable<UsersTable>[]): Promise<void> {
    for (const row of rows) await tx.insertInto('users').values(row).execute();
  },
};
