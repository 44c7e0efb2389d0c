import type { FastifyRequest } from 'fastify';
import { bearerKey, checkCsrf, sessionCookie, type Principal } from '../platform/auth.js';
import type { Clock } from '../platform/clock.js';
import { safeEqual, sha256Hex } from '../platform/crypto.js';
import { ApiError } from '../platform/errors.js';
import { allows, type Category } from '../platform/permissions.js';
import type { UserRow, UsersLookup } from '../users/users-contract.js';
import type { ChallengeRow, TfaStore } from './tfa-store.js';

/** Who calls a 2FA route: a Bearer key or session cookie (principal), or, logged out, a login `tfa_secret`. */
export interface TfaCaller {
  user: UserRow;
  principal: Principal | null;
  /** The login challenge whose secret authenticated a logged-out caller. */
  loginChallenge: ChallengeRow | null;
}

export interface TfaAuthDeps {
  resolve(secret: string): Promise<Principal | null>;
  store: TfaStore;
  users: Pick<UsersLookup, 'findById'>;
  clock: Clock;
}

/**
 * 2FA routes authenticate themselves (contract §4): no credential at all is 401 `missing_auth_value`; an invalid or
 * expired key, session or `tfa_secret` is 403 `auth_error`; a team context is 403 `team_user_forbidden`.
 * Runs before body validation, so the answer to a caller without credentials never depends on the body.
 */
export function tfaAuthenticator({ resolve, store, users, clock }: TfaAuthDeps) {
  const forbidden = (msg: string) => new ApiError('auth_error', msg, {}, 403);
  /** The caller each request's hook established, for as long as the request lives. */
  const callers = new WeakMap<FastifyRequest, TfaCaller>();

  async function authenticate(request: FastifyRequest, category: Category, allowSecret: boolean): Promise<TfaCaller> {
    let presented: string | null;
    try {
      presented = bearerKey(request.headers.authorization);
    } catch {
      throw forbidden('malformed Authorization header; expected "Bearer <api key>"');
    }
    const fromCookie = presented === null ? sessionCookie(request.headers.cookie) : null;
    const key = presented ?? fromCookie;
    if (fromCookie !== null) checkCsrf(request);
    if (key !== null) {
      const principal = await resolve(key);
      if (!principal || (fromCookie !== null && principal.key.kind !== 'session')) throw forbidden('invalid, revoked or expired key or session');
      if (principal.teamId !== null) throw new ApiError('team_user_forbidden', '2FA is managed in the personal context; use a personal key, not a team key');
      if (principal.key.kind === 'instance') throw new ApiError('permission_denied', 'an instance API key cannot manage 2FA');
      if (!allows(principal.permissions, category)) throw new ApiError('permission_denied', `this API key lacks the ${category} permission`);
      request.principal = principal;
      return { user: principal.user, principal, loginChallenge: null };
    }
    const body = request.body as { secret?: unknown } | undefined;
    const secret = allowSecret && body && typeof body === 'object' && typeof body.secret === 'string' ? body.secret : null;
    if (secret === null) {
      throw new ApiError('missing_auth_value', allowSecret ? 'send a Bearer token, or the tfa_secret from login as secret' : 'send "Authorization: Bearer <key>"', {}, 401);
    }
    const hash = sha256Hex(secret);
    const ch = await store.findChallenge(hash);
    if (!ch || !safeEqual(ch.secret_hash, hash) || ch.purpose !== 'login' || ch.consumed_at !== null || ch.expires_at <= clock.now()) {
      throw forbidden('invalid or expired tfa_secret; log in again');
    }
    const user = await users.findById(ch.user_id);
    if (!user) throw forbidden('invalid or expired tfa_secret; log in again');
    request.auditUserId = user.id; // no principal yet: the audit log records the login for this user
    return { user, principal: null, loginChallenge: ch };
  }

  /** A preValidation hook for a 2FA route. */
  function hook(category: Category, allowSecret: boolean) {
    return async (request: FastifyRequest) => {
      callers.set(request, await authenticate(request, category, allowSecret));
    };
  }

  /** The caller a route's preValidation hook established. */
  function callerOf(request: FastifyRequest): TfaCaller {
    const c = callers.get(request);
    if (!c) throw new ApiError('missing_auth_value', 'send a Bearer token or a tfa_secret', {}, 401);
    return c;
  }

  return { authenticate, hook, callerOf };
}

export type TfaAuthenticator = ReturnType<typeof tfaAuthenticator>;
