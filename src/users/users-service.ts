import type { Clock } from '../platform/clock.js';
import { hashPassword } from '../platform/crypto.js';
import type { Db, Tx } from '../platform/db/connect.js';
import { ApiError } from '../platform/errors.js';
import { toDollars, toMicro } from '../platform/money.js';
import type { Principal } from '../platform/auth.js';
import type { Random } from '../platform/random.js';
import type { KeysService } from '../keys/keys-service.js';
import type { UserRow, UsersStore } from './users-store.js';
import { usersContract } from './users-contract.js';
import type { CurrentUserReply, UserObject } from './users-types.js';

/** E-mail of the owner account created on an empty database. */
export const OWNER_EMAIL = 'owner@gpuplane.local';
/** Starting credit in dollars of accounts made through the emulator (contract §2) and of the emulator's owner. */
export const EMU_DEFAULT_CREDIT = 100;
export const EMU_OWNER_CREDIT = 10_000;

export interface NewUserInput {
  email: string;
  password?: string;
  full_name?: string;
  email_verified?: boolean;
  is_admin?: boolean;
  credit?: number;
  phone_number?: string | null;
  tfa_status?: 'enabled' | 'disabled' | 'legacy';
}

export interface UsersServiceDeps {
  db: Db;
  users: UsersStore;
  keysService: KeysService;
  clock: Clock;
  random: Random;
  /**
   * The exact balance in micro-dollars (billing's `balanceOf`): the stored `credit_micro` lags running charges by up
   * to a settlement period, and a user expects the balance that charges have already reduced.
   */
  balance?: (user: UserRow, runningRate: number | undefined) => Promise<number>;
}

/** A unique-index violation, as better-sqlite3 and pg report it. */
function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === '23505';
}

/** The user object; `creditMicro` is the balance to show (the stored credit by default, see `balance`). */
export function toUserObject(u: UserRow, creditMicro = u.credit_micro): UserObject {
  const credit = toDollars(creditMicro);
  return {
    id: u.id,
    username: u.email,
    email: u.email,
    full_name: u.full_name,
    fullname: u.full_name,
    credit,
    balance: credit,
    ssh_key: u.ssh_key,
    tfa_status: u.tfa_status as UserObject['tfa_status'],
    tfa_enabled: u.tfa_status !== 'disabled',
    email_verified_at: u.email_verified_at,
    email_verified: u.email_verified_at !== null,
    is_admin: u.is_admin === 1,
    created_at: u.created_at,
  };
}

export function usersServiceFactory({ db, users, keysService, clock, random, balance }: UsersServiceDeps) {
  async function createUser(input: NewUserInput, tx: Tx = db): Promise<UserRow> {
    const now = clock.now();
    const taken = () => new ApiError('conflict', `a user with e-mail ${input.email} already exists`);
    if (await users.findByEmail(input.email, tx)) throw taken();
    // Another process may insert the same e-mail between the check and the insert: the unique index decides.
    return users.insert(
      {
        email: input.email,
        full_name: input.full_name ?? '',
        password_hash: input.password ? await hashPassword(input.password, random) : null,
        credit_micro: toMicro(input.credit ?? 0),
        ssh_key: null,
        is_admin: input.is_admin ? 1 : 0,
        email_verified_at: input.email_verified === false ? null : now,
        tfa_status: input.tfa_status ?? 'disabled',
        phone_number: input.phone_number ?? null,
        created_at: now,
      },
      tx,
    ).catch((err: unknown) => {
      throw isUniqueViolation(err) ? taken() : err;
    });
  }

  return {
    createUser,

    /**
     * A new full-access API key for the owner (or, when the owner is no longer an admin, the oldest admin), for an
     * operator who lost the owner key: `gpuplane admin create-key`, run against the database. Null when no admin exists.
     */
    async createAdminKey(name: string): Promise<{ user: UserRow; secret: string } | null> {
      const admin = await users.firstAdmin(OWNER_EMAIL);
      if (!admin) return null;
      // A bootstrap key, as the owner's first: it stands in for a lost owner key, so `/_emu/reset` keeps it too.
      const { secret } = await keysService.create({ user_id: admin.id, kind: 'user', name, is_bootstrap: true });
      return { user: admin, secret };
    },

    /**
     * Sets an account's password from the server's machine (`gpuplane admin set-password`): the owner is made without
     * one, so it could not use the web console (issue 29 item 7). The owner (or the oldest admin) without `email`.
     * Null when there is no such account.
     */
    async setPassword(email: string | undefined, password: string): Promise<UserRow | null> {
      const user = email === undefined ? await users.firstAdmin(OWNER_EMAIL) : await users.findByEmail(email);
      if (!user) return null;
      await usersContract.setPasswordHash(db, user.id, await hashPassword(password, random));
      return user;
    },

    async current(principal: Principal): Promise<CurrentUserReply> {
      const u = principal.user;
      // One object, with the key added in place: copying the 14 fields again (a spread) cost more than the rest of
      // this function on this hot route.
      const reply = toUserObject(u, balance ? await balance(u, principal.runningRate) : u.credit_micro) as CurrentUserReply;
      reply.api_key = principal.presentedKey;
      return reply;
    },

    /**
     * On a database with no users, creates the owner (admin, e-mail verified) with the given key, or a generated one.
     * Returns the generated secret (to be printed once), or null when nothing was generated or created.
     */
    async ensureOwner(bootstrapKey: string | undefined, credit: number): Promise<{ created: boolean; generatedKey: string | null }> {
      if ((await users.count()) > 0) return { created: false, generatedKey: null };
      return db.transaction().execute(async (tx) => {
        const now = clock.now();
        // Two processes starting on one empty database: the unique e-mail lets exactly one create the owner.
        const owner = await users.insertIfAbsent(
          {
            email: OWNER_EMAIL,
            full_name: 'Owner',
            password_hash: null,
            credit_micro: toMicro(credit),
            ssh_key: null,
            is_admin: 1,
            email_verified_at: now,
            tfa_status: 'disabled',
            phone_number: null,
            created_at: now,
          },
          tx,
        );
        if (!owner) return { created: false, generatedKey: null };
        const { secret } = await keysService.create(
          { user_id: owner.id, kind: 'user', name: 'bootstrap', is_bootstrap: true, secret: bootstrapKey },
          tx,
        );
        return { created: true, generatedKey: bootstrapKey ? null : secret };
      });
    },
  };
}

export type UsersService = ReturnType<typeof usersServiceFactory>;
