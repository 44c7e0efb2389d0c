/**
 * Subaccounts (docs/spec/client-compat-more.md §b): `vastai create subaccount` posts the sign-up route with
 * `parent_id: "me"` and the caller's key; the new account gets the e-mail and password given (its credentials: it
 * logs in with them, once its address is verified with the code e-mailed to it, as a sign-up's is). The parent lists
 * its subaccounts with their balances and funds them by transferring credit (`transfer credit`, any account may
 * receive). A `host_only` subaccount may host machines but not rent: renting answers 403.
 */
import { LRUCache } from 'lru-cache';
import type { Principal } from '../platform/auth.js';
import type { Clock } from '../platform/clock.js';
import type { Db, Tx } from '../platform/db/connect.js';
import { ApiError } from '../platform/errors.js';
import type { Static } from 'typebox';
import type { NewUserInput } from '../users/users-service.js';
import { toUserObject } from '../users/users-service.js';
import type { UserRow } from '../users/users-contract.js';
import type { SubaccountCreated, SubaccountUser } from './subaccounts-schemas.js';
import type { SubaccountRow, SubaccountsStore } from './subaccounts-store.js';

export interface SubaccountsDeps {
  db: Db;
  subaccounts: SubaccountsStore;
  clock: Clock;
  /** The users feature: makes the account (in the caller's transaction) and reads accounts. */
  createUser(input: NewUserInput, tx: Tx): Promise<UserRow>;
  usersByIds(ids: number[]): Promise<UserRow[]>;
  /** Login: e-mails the address a code that verifies it (as after a sign-up). */
  sendVerification(userId: number, email: string): Promise<void>;
  /** Billing: the exact balance in micro-dollars (running charges included). */
  balance(user: UserRow): Promise<number>;
}

/** What `vastai create subaccount` sends besides the credentials. */
export interface NewSubaccount {
  email: string;
  password: string;
  full_name?: string;
  username?: string;
  host_only?: boolean;
  parent_id: 'me' | number;
}

function view(user: UserRow, sub: SubaccountRow, creditMicro = user.credit_micro): Static<typeof SubaccountUser> {
  return { ...toUserObject(user, creditMicro), username: sub.username ?? user.email, parent_id: sub.parent_id, host_only: sub.host_only === 1 };
}

/** Users whose host-only status a process keeps; past it, the least recently asked about is forgotten. */
const HOST_ONLY_REMEMBERED = 10_000;

export function subaccountsServiceFactory(deps: SubaccountsDeps) {
  const { db, subaccounts, clock } = deps;
  /** Whether each user that rented is a host-only subaccount (`assertMayRent`). */
  const hostOnlyOf = new LRUCache<number, boolean>({ max: HOST_ONLY_REMEMBERED });

  /** Subaccounts hang off a personal account, one level deep. */
  async function assertMayParent(p: Principal): Promise<void> {
    if (p.teamId !== null) throw new ApiError('permission_denied', 'subaccounts belong to a personal account: use a personal API key, not a team key');
    if (await subaccounts.find(p.user.id)) throw new ApiError('permission_denied', 'a subaccount cannot have subaccounts of its own');
  }

  return {
    async create(p: Principal, body: NewSubaccount): Promise<Static<typeof SubaccountCreated>> {
      if (body.parent_id !== 'me' && body.parent_id !== p.user.id) {
        throw new ApiError('permission_denied', 'parent_id must be "me": a subaccount is made under the account of the key in use');
      }
      await assertMayParent(p);
      const { user, sub } = await db.transaction().execute(async (tx) => {
        const user = await deps.createUser({ email: body.email, password: body.password, full_name: body.full_name, email_verified: false, credit: 0 }, tx);
        const sub = await subaccounts.insert({ user_id: user.id, parent_id: p.user.id, username: body.username ?? null, host_only: body.host_only ? 1 : 0, created_at: clock.now() }, tx);
        return { user, sub };
      });
      await deps.sendVerification(user.id, user.email);
      return {
        success: true,
        msg: `subaccount ${user.id} created${sub.host_only ? ' (host only)' : ''}; a verification code was sent to ${user.email}; fund it with transfer credit`,
        user: view(user, sub),
      };
    },

    /** `GET /api/v0/subaccounts`: the caller's subaccounts with their exact balances. */
    async list(p: Principal): Promise<{ success: true; users: Static<typeof SubaccountUser>[] }> {
      if (p.teamId !== null) throw new ApiError('permission_denied', 'subaccounts belong to a personal account: use a personal API key, not a team key');
      const subs = await subaccounts.listOf(p.user.id);
      const users = new Map((await deps.usersByIds(subs.map((s) => s.user_id))).map((u) => [u.id, u]));
      const out: Static<typeof SubaccountUser>[] = [];
      for (const sub of subs) {
        const user = users.get(sub.user_id);
        if (user) out.push(view(user, sub, await deps.balance(user)));
      }
      return { success: true, users: out };
    },

    /**
     * Renting (instances, volumes): a host-only subaccount may not. Whether a user is one is written with the user
     * (`create`, one transaction) and never changes, and users are never deleted: read once per user and process
     * (outside a transaction only: one may roll back the user it created).
     */
    async assertMayRent(userId: number, tx?: Tx): Promise<void> {
      let hostOnly = hostOnlyOf.get(userId);
      if (hostOnly === undefined) {
        hostOnly = await subaccounts.isHostOnly(userId, tx);
        if (tx === undefined) {
          hostOnlyOf.set(userId, hostOnly);
        }
      }
      if (hostOnly) {
        throw new ApiError('permission_denied', 'this is a host-only subaccount: it can host machines but not rent instances or volumes');
      }
    },
  };
}

export type SubaccountsService = ReturnType<typeof subaccountsServiceFactory>;
