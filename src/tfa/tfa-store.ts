import { sql, type Insertable, type Selectable } from 'kysely';
import { usersContract } from '../users/users-contract.js';
import type { Tx, DialectName } from '../platform/db/connect.js';
import type { TfaChallengesTable, TfaMethodsTable } from './tfa-tables.js';
import { TFA_CHALLENGE_MAX_ATTEMPTS, TFA_LOCKOUT_S, TFA_MAX_FAILED_ATTEMPTS } from './tfa-constants.js';

export type MethodRow = Selectable<TfaMethodsTable>;
export type ChallengeRow = Selectable<TfaChallengesTable>;

/** SQL of the 2FA subsystem. Every function takes an optional transaction. */
export function tfaStore(db: Tx, dialect: DialectName = 'sqlite') {
  return {
    // ---- methods
    async listMethods(userId: number, tx: Tx = db): Promise<MethodRow[]> {
      return tx.selectFrom('tfa_methods').selectAll().where('user_id', '=', userId).orderBy('id').execute();
    },
    async findMethod(userId: number, id: number, tx: Tx = db): Promise<MethodRow | undefined> {
      return tx.selectFrom('tfa_methods').selectAll().where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
    },
    async findMethodById(id: number, tx: Tx = db): Promise<MethodRow | undefined> {
      return tx.selectFrom('tfa_methods').selectAll().where('id', '=', id).executeTakeFirst();
    },
    async insertMethod(m: Insertable<TfaMethodsTable>, tx: Tx = db): Promise<MethodRow> {
      return tx.insertInto('tfa_methods').values(m).returningAll().executeTakeFirstOrThrow();
    },
    async updateMethod(id: number, set: { label?: string; is_primary?: number }, tx: Tx = db): Promise<void> {
      await tx.updateTable('tfa_methods').set(set).where('id', '=', id).execute();
    },
    async clearPrimary(userId: number, tx: Tx = db): Promise<void> {
      await tx.updateTable('tfa_methods').set({ is_primary: 0 }).where('user_id', '=', userId).execute();
    },
    async deleteMethod(id: number, tx: Tx = db): Promise<void> {
      await tx.deleteFrom('tfa_methods').where('id', '=', id).execute();
    },

    /**
     * Reserves one attempt on a method before its code is checked, in one conditional UPDATE: a burst of parallel
     * guesses cannot get more tries than the lockout allows. The attempt that reaches the limit locks the method at
     * once (a success then unlocks it). An expired lock starts a fresh count. Returns the new count, or undefined
     * when the method is locked.
     */
    async claimMethodAttempt(id: number, now: number, tx: Tx = db): Promise<{ fail_count: number; locked_until: number | null } | undefined> {
      const at = sql`CAST(${now} AS double precision)`;
      const until = sql`CAST(${now + TFA_LOCKOUT_S} AS double precision)`;
      const max = sql.lit(TFA_MAX_FAILED_ATTEMPTS);
      const expired = sql<boolean>`(locked_until IS NOT NULL AND locked_until <= ${at})`;
      const next = sql<number>`CASE WHEN ${expired} THEN 1 ELSE fail_count + 1 END`;
      return tx
        .updateTable('tfa_methods')
        .set({
          fail_count: next,
          locked_until: sql`CASE WHEN ${next} >= ${max} THEN ${until} ELSE NULL END`,
        })
        .where('id', '=', id)
        .where(sql<boolean>`(${expired} OR (locked_until IS NULL AND fail_count < ${max}))`)
        .returning(['fail_count', 'locked_until'])
        .executeTakeFirst();
    },
    /** A server error must not cost the user an attempt: gives back the one reserved. */
    async refundMethodAttempt(id: number, tx: Tx = db): Promise<void> {
      await tx
        .updateTable('tfa_methods')
        .set({ fail_count: sql`CASE WHEN fail_count > 0 THEN fail_count - 1 ELSE 0 END`, locked_until: null })
        .where('id', '=', id)
        .execute();
    },
    async methodSucceeded(id: number, now: number, tx: Tx = db): Promise<void> {
      await tx.updateTable('tfa_methods').set({ fail_count: 0, locked_until: null, last_used: now }).where('id', '=', id).execute();
    },
    /** Records the accepted TOTP step; false when that step (or a later one) was already used: a replay. */
    async acceptTotpStep(id: number, step: number, now: number, tx: Tx = db): Promise<boolean> {
      const r = await tx
        .updateTable('tfa_methods')
        .set({ last_totp_step: step, fail_count: 0, locked_until: null, last_used: now })
        .where('id', '=', id)
        .where((eb) => eb.or([eb('last_totp_step', 'is', null), eb('last_totp_step', '<', step)]))
        .executeTakeFirst();
      return Number(r.numUpdatedRows) === 1;
    },

    // ---- backup codes
    async insertBackupCodes(userId: number, hashes: string[], now: number, tx: Tx = db): Promise<void> {
      await tx
        .insertInto('tfa_backup_codes')
        .values(hashes.map((code_hash) => ({ user_id: userId, code_hash, created_at: now })))
        .execute();
    },
    async softDeleteBackupCodes(userId: number, now: number, tx: Tx = db): Promise<void> {
      await tx.updateTable('tfa_backup_codes').set({ deleted_at: now }).where('user_id', '=', userId).where('deleted_at', 'is', null).execute();
    },
    async findLiveBackupCode(userId: number, hash: string, tx: Tx = db) {
      return tx
        .selectFrom('tfa_backup_codes')
        .select(['id', 'code_hash'])
        .where('user_id', '=', userId)
        .where('code_hash', '=', hash)
        .where('used_at', 'is', null)
        .where('deleted_at', 'is', null)
        .executeTakeFirst();
    },
    /** One use each: only one of two parallel uses of a code wins this UPDATE. */
    async useBackupCode(id: number, now: number, tx: Tx = db): Promise<boolean> {
      const r = await tx.updateTable('tfa_backup_codes').set({ used_at: now }).where('id', '=', id).where('used_at', 'is', null).executeTakeFirst();
      return Number(r.numUpdatedRows) === 1;
    },
    async countBackupCodes(userId: number, tx: Tx = db): Promise<number> {
      const r = await tx
        .selectFrom('tfa_backup_codes')
        .select(sql<number>`count(*)`.as('n'))
        .where('user_id', '=', userId)
        .where('used_at', 'is', null)
        .where('deleted_at', 'is', null)
        .executeTakeFirstOrThrow();
      return Number(r.n);
    },

    // ---- challenges
    async insertChallenge(c: Insertable<TfaChallengesTable>, tx: Tx = db): Promise<ChallengeRow> {
      return tx.insertInto('tfa_challenges').values(c).returningAll().executeTakeFirstOrThrow();
    },
    async findChallenge(secretHash: string, tx: Tx = db): Promise<ChallengeRow | undefined> {
      return tx.selectFrom('tfa_challenges').selectAll().where('secret_hash', '=', secretHash).executeTakeFirst();
    },
    /** A new code on an existing challenge (send, resend): the attempt count starts again. */
    async setChallengeCode(
      id: number,
      set: { channel: string; code_hash: string | null; phone_number?: string | null; method_id?: number | null; last_sent_at: number | null; code_expires_at: number },
      tx: Tx = db,
    ): Promise<void> {
      await tx.updateTable('tfa_challenges').set({ ...set, fail_count: 0 }).where('id', '=', id).execute();
    },
    /** The most recent live SMS challenge to `phone` of this user (for `tfa_challenge_exists`). */
    async lastSmsTo(userId: number, phone: string, tx: Tx = db): Promise<ChallengeRow | undefined> {
      return tx
        .selectFrom('tfa_challenges')
        .selectAll()
        .where('user_id', '=', userId)
        .where('channel', '=', 'sms')
        .where('phone_number', '=', phone)
        .where('consumed_at', 'is', null)
        .orderBy('last_sent_at', 'desc')
        .limit(1)
        .executeTakeFirst();
    },
    /** Reserves an attempt on a method-less challenge; undefined when it is used up, consumed or gone. */
    async claimChallengeAttempt(id: number, tx: Tx = db): Promise<number | undefined> {
      const r = await tx
        .updateTable('tfa_challenges')
        .set({ fail_count: sql`fail_count + 1` })
        .where('id', '=', id)
        .where('consumed_at', 'is', null)
        .where('fail_count', '<', sql.lit(TFA_CHALLENGE_MAX_ATTEMPTS))
        .returning('fail_count')
        .executeTakeFirst();
      return r?.fail_count;
    },
    async refundChallengeAttempt(id: number, tx: Tx = db): Promise<void> {
      await tx.updateTable('tfa_challenges').set({ fail_count: sql`CASE WHEN fail_count > 0 THEN fail_count - 1 ELSE 0 END` }).where('id', '=', id).execute();
    },
    /** Consumes a challenge once; false when another request consumed it first. */
    async consumeChallenge(id: number, now: number, tx: Tx = db): Promise<boolean> {
      const r = await tx.updateTable('tfa_challenges').set({ consumed_at: now }).where('id', '=', id).where('consumed_at', 'is', null).executeTakeFirst();
      return Number(r.numUpdatedRows) === 1;
    },

    // ---- per-account state
    async account(userId: number, tx: Tx = db) {
      return tx.selectFrom('tfa_accounts').selectAll().where('user_id', '=', userId).executeTakeFirst();
    },
    async upsertAccount(
      userId: number,
      set: Partial<{ new_method_until: number | null; sms_fraud_at: number | null; login_fail_count: number; login_locked_until: number | null }>,
      tx: Tx = db,
    ): Promise<void> {
      await tx
        .insertInto('tfa_accounts')
        .values({ user_id: userId, login_fail_count: 0, ...set })
        .onConflict((oc) => oc.column('user_id').doUpdateSet(set))
        .execute();
    },

    // ---- SMS sends (limits)
    /**
     * Serializes SMS reservations of this account and of this number until `tx` ends, so that counting the sends and
     * recording one is atomic: PostgreSQL transaction-scoped advisory locks (account first, then number: one order,
     * no deadlock); SQLite runs one write transaction at a time already.
     */
    async lockSmsCounters(userId: number, phone: string, tx: Tx): Promise<void> {
      if (dialect !== 'postgres') return;
      await sql`SELECT pg_advisory_xact_lock(hashtext(${`gpuplane.sms.user:${userId}`})), pg_advisory_xact_lock(hashtext(${`gpuplane.sms.number:${phone}`}))`.execute(tx);
    },
    async recordSms(userId: number, phone: string, preauth: boolean, now: number, tx: Tx = db): Promise<number> {
      const r = await tx.insertInto('sms_sends').values({ user_id: userId, phone_number: phone, preauth: preauth ? 1 : 0, sent_at: now }).returning('id').executeTakeFirstOrThrow();
      return r.id;
    },
    /** Gives back a reserved send whose message never went out. */
    async unrecordSms(id: number, tx: Tx = db): Promise<void> {
      await tx.deleteFrom('sms_sends').where('id', '=', id).execute();
    },
    async smsCounts(userId: number, phone: string, hourAgo: number, dayAgo: number, tx: Tx = db) {
      const n = (q: any) => q.select(sql<number>`count(*)`.as('n')).executeTakeFirstOrThrow().then((r: { n: number }) => Number(r.n));
      const [byUser, byNumber, preauthByNumber] = await Promise.all([
        n(tx.selectFrom('sms_sends').where('user_id', '=', userId).where('sent_at', '>', hourAgo)),
        n(tx.selectFrom('sms_sends').where('phone_number', '=', phone).where('sent_at', '>', hourAgo)),
        n(tx.selectFrom('sms_sends').where('phone_number', '=', phone).where('preauth', '=', 1).where('sent_at', '>', dayAgo)),
      ]);
      return { byUser: byUser as number, byNumber: byNumber as number, preauthByNumber: preauthByNumber as number };
    },
    async distinctNumbersSince(userId: number, since: number, tx: Tx = db): Promise<string[]> {
      const rows = await tx.selectFrom('sms_sends').select('phone_number').distinct().where('user_id', '=', userId).where('sent_at', '>', since).execute();
      return rows.map((r) => r.phone_number);
    },

    // ---- login: e-mailed codes (login's email-codes.ts)
    /** The newest unused e-mailed code of a user for `purpose` (`email_verify`, `password_reset`). */
    async latestCode(userId: number, purpose: string, tx: Tx = db) {
      return tx
        .selectFrom('tfa_challenges')
        .selectAll()
        .where('user_id', '=', userId)
        .where('purpose', '=', purpose)
        .where('consumed_at', 'is', null)
        .orderBy('id', 'desc')
        .limit(1)
        .executeTakeFirst();
    },
    /** Codes of `purpose` made for a user since `since`, and the wrong guesses made on them (daily caps). */
    async codesSince(userId: number, purpose: string, since: number, tx: Tx = db): Promise<{ codes: number; guesses: number }> {
      const r = await tx
        .selectFrom('tfa_challenges')
        .select([sql<number>`count(*)`.as('codes'), sql<number>`coalesce(sum(fail_count), 0)`.as('guesses')])
        .where('user_id', '=', userId)
        .where('purpose', '=', purpose)
        .where('created_at', '>', since)
        .executeTakeFirstOrThrow();
      return { codes: Number(r.codes), guesses: Number(r.guesses) };
    },
    /** Burns every live code of `purpose` of a user (a newer sign-up or reset replaces them). */
    async burnCodes(userId: number, purpose: string, now: number, tx: Tx = db): Promise<void> {
      await tx.updateTable('tfa_challenges').set({ consumed_at: now }).where('user_id', '=', userId).where('purpose', '=', purpose).where('consumed_at', 'is', null).execute();
    },
    // ---- users (2FA status and phone on file are columns of the user)
    async setTfaStatus(userId: number, status: 'enabled' | 'disabled' | 'legacy', tx: Tx = db): Promise<void> {
      await usersContract.setTfaStatus(tx, userId, status);
    },
  };
}

export type TfaStore = ReturnType<typeof tfaStore>;
