import type { Insertable, Selectable } from 'kysely';
import { sql } from 'kysely';
import type { Tx } from '../platform/db/connect.js';
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
