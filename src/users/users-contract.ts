import type { UserRow, UsersStore } from './users-store.js';
import { usersInTransaction } from './users-store.js';

/** A user row, as other features hold it (the principal's user, a looked-up account). */
export type { UserRow };

/**
 * How other features find an account (login by e-mail, 2FA and login by id, teams by e-mail): the users store's
 * reads, handed to them by the root.
 */
export type UsersLookup = Pick<UsersStore, 'findById' | 'findByEmail'>;

/**
 * What other features read, write and lock in the `users` table, for the columns they own the meaning of: the users
 * feature is the only one that runs SQL writing it (docs/DEVELOPING.md, "Layers and their rules"). Each function
 * takes the caller's transaction; the SQL is the store's (users-store.ts).
 */
export const usersContract = usersInTransaction;
