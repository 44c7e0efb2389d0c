import { sql } from 'kysely';
import type { Tx } from '../platform/db/connect.js';

/** SQL of sign-up verification and login throttling. */
export function loginStore(db: Tx) {
  return {
    async setEmailVerified(userId: number, now: number, tx: Tx = db): Promise<void> {
      await tx.updateTable('users').set({ email_verified_at: now }).where('id', '=', userId).where('email_verified_at', 'is', null).execute();
    },
    /** The newest unused e-mail verification challenge of a user. */
    async latestEmailVerify(userId: number, tx: Tx = db) {
      return tx
        .selectFrom('tfa_challenges')
        .selectAll()
        .where('user_id', '=', userId)
        .where('purpose', '=', 'email_verify')
        .where('consumed_at', 'is', null)
        .orderBy('id', 'desc')
        .limit(1)
        .executeTakeFirst();
    },
    async loginState(userId: number, tx: Tx = db) {
      return tx.selectFrom('tfa_accounts').select(['login_fail_count', 'login_locked_until']).where('user_id', '=', userId).executeTakeFirst();
    },
    /** Counts a wrong password in one statement; the failure that reaches `max` locks logins until `lockUntil`. */
    async loginFailed(userId: number, max: number, lockUntil: number, tx: Tx = db): Promise<void> {
      const until = sql`CAST(${lockUntil} AS double precision)`;
      await tx
        .insertInto('tfa_accounts')
        .values({ user_id: userId, login_fail_count: 1 })
        .onConflict((oc) =>
          oc.column('user_id').doUpdateSet({
            login_fail_count: sql`tfa_accounts.login_fail_count + 1`,
            login_locked_until: sql`CASE WHEN tfa_accounts.login_fail_count + 1 >= ${sql.lit(max)} THEN ${until} ELSE tfa_accounts.login_locked_until END`,
          }),
        )
        .execute();
    },
    async loginSucceeded(userId: number, tx: Tx = db): Promise<void> {
      await tx.updateTable('tfa_accounts').set({ login_fail_count: 0, login_locked_until: null }).where('user_id', '=', userId).execute();
    },
  };
}

export type LoginStore = ReturnType<typeof loginStore>;
