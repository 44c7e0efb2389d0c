import { sql, type RawBuilder } from 'kysely';
import type { Tx } from '../platform/db/connect.js';
import { LOGIN_FAILURE_WINDOW_S, type ThrottleScope } from './login-constants.js';

/** What a reservation took: the count it reached and the hold it set (null when none). */
export interface Reserved {
  fail_count: number;
  blocked_until: number | null;
  familiar: number;
}

const T = 'login_throttles';
const time = (t: number) => sql`CAST(${t} AS double precision)`;

/**
 * The hold after the `n`-th wrong password of a scope as SQL: none within the free allowance, then the base delay
 * doubled per further failure, up to the cap. Written out as a CASE over the few counts where it grows (SQLite has
 * no power function by default), from `now`.
 */
function holdAfter(n: RawBuilder<number>, scope: ThrottleScope, now: number): RawBuilder<number | null> {
  const steps: RawBuilder<unknown>[] = [];
  for (let k = 0, d = scope.baseDelayS; ; k++, d *= 2) {
    const delay = Math.min(d, scope.maxDelayS);
    steps.push(sql`WHEN ${n} >= ${sql.lit(scope.free + k)} THEN ${time(now + delay)}`);
    if (delay === scope.maxDelayS) break;
  }
  return sql<number | null>`CASE ${sql.join(steps.reverse(), sql` `)} ELSE NULL END`;
}

/** SQL of the password throttle. Every function takes an optional transaction. */
export function loginThrottleStore(db: Tx) {
  return {
    /**
     * Reserves one attempt in a scope before the password is checked, in one conditional upsert: counted as a failure
     * now (a right password gives it back), and refused (undefined) while the scope is held. A burst of parallel
     * guesses therefore gets no more checks than the scope allows. With `enforce` false the attempt is counted but
     * never refused (the account scope, for an address the account logged in from before).
     */
    async reserve(key: string, account: string | null, scope: ThrottleScope, now: number, enforce: boolean, tx: Tx = db): Promise<Reserved | undefined> {
      const stale = sql<boolean>`${sql.ref(`${T}.last_failed_at`)} <= ${time(now - LOGIN_FAILURE_WINDOW_S)}`;
      const next = sql<number>`CASE WHEN ${stale} THEN 1 ELSE ${sql.ref(`${T}.fail_count`)} + 1 END`;
      const open = sql<boolean>`(${sql.ref(`${T}.blocked_until`)} IS NULL OR ${sql.ref(`${T}.blocked_until`)} <= ${time(now)})`;
      return tx
        .insertInto(T)
        .values({ scope_key: key, account, fail_count: 1, last_failed_at: now, blocked_until: holdAfter(sql.lit(1), scope, now), familiar: 0 })
        .onConflict((oc) => {
          const update = oc.column('scope_key').doUpdateSet({ fail_count: next, last_failed_at: now, blocked_until: holdAfter(next, scope, now) });
          return enforce ? update.where(open) : update;
        })
        .returning(['fail_count', 'blocked_until', 'familiar'])
        .executeTakeFirst();
    },

    /**
     * Gives back a reserved attempt (a right password, or a failure that was not a guess). The hold goes with it when
     * the count falls back within the allowance or the hold is the one this reservation set; a later wrong password's
     * hold stays.
     */
    async refund(key: string, scope: ThrottleScope, setHold: number | null, tx: Tx = db): Promise<void> {
      const ours = setHold === null ? sql<boolean>`FALSE` : sql<boolean>`blocked_until = ${time(setHold)}`;
      await tx
        .updateTable(T)
        .set({
          fail_count: sql`CASE WHEN fail_count > 0 THEN fail_count - 1 ELSE 0 END`,
          blocked_until: sql`CASE WHEN fail_count - 1 < ${sql.lit(scope.free)} OR ${ours} THEN NULL ELSE blocked_until END`,
        })
        .where('scope_key', '=', key)
        .execute();
    },

    /** The right password from this address: its count starts again, and the address is one the account knows. */
    async pairSucceeded(key: string, tx: Tx = db): Promise<void> {
      await tx.updateTable(T).set({ fail_count: 0, blocked_until: null, familiar: 1 }).where('scope_key', '=', key).execute();
    },

    /** Until when a scope holds attempts back (for Retry-After); null when it does not. */
    async heldUntil(key: string, tx: Tx = db): Promise<number | null> {
      const r = await tx.selectFrom(T).select('blocked_until').where('scope_key', '=', key).executeTakeFirst();
      return r?.blocked_until ?? null;
    },

    /** Marks the account's owner as told, once per window; true when this call is the one that should tell them. */
    async claimAlert(key: string, now: number, tx: Tx = db): Promise<boolean> {
      const r = await tx
        .updateTable(T)
        .set({ alerted_at: now })
        .where('scope_key', '=', key)
        .where((eb) => eb.or([eb('alerted_at', 'is', null), eb('alerted_at', '<=', now - LOGIN_FAILURE_WINDOW_S)]))
        .executeTakeFirst();
      return Number(r.numUpdatedRows) === 1;
    },

    /**
     * Deletes counters with nothing left to say: no failure since `before` (their count would start again), and no
     * address the account knows. Rows exist for any name typed at login, so without this they would only grow.
     */
    async prune(before: number, tx: Tx = db): Promise<void> {
      await tx.deleteFrom(T).where('last_failed_at', '<=', before).where('familiar', '=', 0).execute();
    },

    /** After a password change or reset, no address counts as one the account knows (a thief's included). */
    async forgetSources(account: string, tx: Tx = db): Promise<void> {
      await tx.updateTable(T).set({ familiar: 0 }).where('account', '=', account).where('familiar', '=', 1).execute();
    },
  };
}

export type LoginThrottleStore = ReturnType<typeof loginThrottleStore>;
