import type { Clock } from '../platform/clock.js';
import { ApiError } from '../platform/errors.js';
import { LOGIN_ALERT_FAILURES, LOGIN_FAILURE_WINDOW_S, LOGIN_PRUNE_EVERY_S, LOGIN_THROTTLE, type ThrottleScopeName } from './login-constants.js';
import type { LoginThrottleStore, Reserved } from './login-throttle-store.js';
import { durationText } from '../platform/clock.js';

/** One login attempt's reservations: settle it with exactly one of these once the password is checked. */
export interface LoginGate {
  /** The right password: the reservations are given back and this address becomes one the account knows. */
  succeeded(): Promise<void>;
  /** A wrong password: the reservations stay; the owner is e-mailed when the account sees many (once per window). */
  failed(owner: { email: string } | undefined): Promise<void>;
  /** Not a guess (a server error): everything is given back. */
  refund(): Promise<void>;
}

export interface LoginThrottleDeps {
  store: LoginThrottleStore;
  clock: Clock;
  /** Tells an account's owner that their account sees many wrong passwords; a failure to send is not the caller's. */
  alert(email: string, failures: number): Promise<void>;
}

/**
 * The password throttle (issue 29 item 15): reserve, then check, as 2FA's method attempts do (tfa-verify.ts
 * `onMethodAttempt`). The lock used to be read before the hash and the failure counted after it, so 200 parallel
 * guesses had 199 checked. Now each attempt first takes a slot in its address's scope, its account-and-address
 * scope and its account's scope, each a conditional upsert that refuses while the scope is held; only then is the
 * password hashed. A wrong password keeps its slots (nothing is refunded for it).
 *
 * Scopes are keyed by the login name as typed (lowercased), whether or not an account has it, so a 429 tells no one
 * which addresses have accounts.
 */
export function loginThrottleFactory({ store, clock, alert }: LoginThrottleDeps) {
  /** When this process last deleted stale counters (service time): at most once per `LOGIN_PRUNE_EVERY_S`. */
  let prunedAt = -Infinity;
  const pruneIfDue = async (now: number): Promise<void> => {
    if (now - prunedAt < LOGIN_PRUNE_EVERY_S) return;
    prunedAt = now;
    await store.prune(now - LOGIN_FAILURE_WINDOW_S);
  };
  const keyOf = {
    source: (_name: string, ip: string) => `source:${ip}`,
    pair: (name: string, ip: string) => `pair:${name}\n${ip}`,
    account: (name: string) => `account:${name}`,
  } satisfies Record<ThrottleScopeName, (name: string, ip: string) => string>;

  const held = async (scope: ThrottleScopeName, key: string): Promise<ApiError> => {
    const wait = Math.max(1, Math.ceil(((await store.heldUntil(key)) ?? clock.now()) - clock.now()));
    const what = scope === 'source' ? 'from this address' : 'on this account';
    return new ApiError('rate_limited', `too many wrong passwords ${what}; try again in ${durationText(wait)}`, {}, undefined, { 'Retry-After': String(wait) });
  };

  return {
    /** Takes this attempt's slots, or throws 429 `rate_limited` with Retry-After when a scope holds it back. */
    async reserve(username: string, ip: string): Promise<LoginGate> {
      const name = username.toLowerCase();
      const now = clock.now();
      const taken: { scope: ThrottleScopeName; key: string; got: Reserved }[] = [];
      const giveBack = async () => {
        for (const t of taken) await store.refund(t.key, LOGIN_THROTTLE[t.scope], t.got.blocked_until);
      };
      const take = async (scope: ThrottleScopeName, account: string | null, enforce = true): Promise<Reserved> => {
        const key = keyOf[scope](name, ip);
        const got = await store.reserve(key, account, LOGIN_THROTTLE[scope], now, enforce);
        if (!got) {
          await giveBack();
          throw await held(scope, key);
        }
        taken.push({ scope, key, got });
        return got;
      };
      await take('source', null);
      const pair = await take('pair', name);
      // An address that logged in to this account before is not held back by failures from everywhere else.
      const account = await take('account', name, pair.familiar !== 1);
      return {
        async succeeded() {
          await giveBack();
          await store.pairSucceeded(keyOf.pair(name, ip));
        },
        async failed(owner) {
          await pruneIfDue(clock.now());
          if (!owner || account.fail_count < LOGIN_ALERT_FAILURES) return;
          if (await store.claimAlert(keyOf.account(name), clock.now())) await alert(owner.email, account.fail_count);
        },
        refund: giveBack,
      };
    },

    /** After a password change or reset: no address is trusted any more for this account. */
    forgetSources: (email: string) => store.forgetSources(email.toLowerCase()),
  };
}

export type LoginThrottle = ReturnType<typeof loginThrottleFactory>;

/** The e-mail that tells an owner their account sees many wrong passwords (once a window). */
export function failuresAlertText(failures: number): string {
  return [
    `Your gpuplane account has had ${failures} failed password logins in the last ${durationText(LOGIN_FAILURE_WINDOW_S)}.`,
    'If that was not you, someone is guessing your password: logins from new addresses are slowed down, and your own',
    'still work. Choose a long password you use nowhere else (web console: Account, Change password) and turn on',
    'two-factor authentication (web console: Security). You will get this message at most once a day.',
  ].join('\n');
}
