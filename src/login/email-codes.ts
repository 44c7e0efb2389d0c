import type { Clock } from '../platform/clock.js';
import type { Db, Tx } from '../platform/db/connect.js';
import type { DialectName } from '../platform/db/migrations.js';
import { safeEqual, sha256Hex } from '../platform/crypto.js';
import { ApiError } from '../platform/errors.js';
import { digitCode, type Random } from '../platform/random.js';
import { usersContract } from '../users/users-contract.js';
import { CODE_DIGITS } from '../tfa/tfa-constants.js';
import type { ChallengeRow, TfaForLogin } from '../tfa/tfa-contract.js';
import { DAY_S, HOUR_S } from './login-constants.js';

/** What an e-mailed code is for; each is a `tfa_challenges` purpose. */
export type CodePurpose = 'email_verify' | 'password_reset';

export interface CodeLimits {
  ttlS: number;
  perDay: number;
  perHour?: number;
  /** Seconds between two codes. */
  minGapS?: number;
  /** Wrong guesses a day over all codes of this purpose (each code also burns after `TFA_CHALLENGE_MAX_ATTEMPTS`). */
  guessesPerDay: number;
}

export interface EmailCodesDeps {
  db: Db;
  dialect: DialectName;
  tfa: Pick<TfaForLogin, 'insertEmailCode' | 'latestCode' | 'codesSince' | 'burnCodes' | 'claimChallengeAttempt' | 'consumeChallenge'>;
  clock: Clock;
  random: Random;
}

/**
 * Codes e-mailed to prove someone reads an address (sign-up verification, password reset). Stored as SHA-256 only,
 * compared in constant time, never logged. Issuing runs under the user's lock, so two parallel requests cannot both
 * pass a cap; checking reserves an attempt before comparing, as 2FA's challenges do.
 */
export function emailCodesFactory({ db, dialect, tfa, clock, random }: EmailCodesDeps) {
  return {
    /**
     * A new code of `purpose` for a user, or null when a limit says not now. `during` runs in the same transaction,
     * under the lock, after the limits passed (a sign-up's takeover). Earlier live codes are burnt with `burn`.
     */
    async issue(
      userId: number,
      purpose: CodePurpose,
      limits: CodeLimits,
      opts: { burn?: boolean; client?: string | null; during?: (tx: Tx) => Promise<void> } = {},
    ): Promise<string | null> {
      return db.transaction().execute(async (tx) => {
        await usersContract.lock(tx, userId, dialect);
        const now = clock.now();
        const day = await tfa.codesSince(userId, purpose, now - DAY_S, tx);
        if (day.codes >= limits.perDay) return null;
        if (limits.perHour !== undefined && (await tfa.codesSince(userId, purpose, now - HOUR_S, tx)).codes >= limits.perHour) return null;
        const last = await tfa.latestCode(userId, purpose, tx);
        if (limits.minGapS !== undefined && last && now - (last.last_sent_at ?? 0) < limits.minGapS) return null;
        await opts.during?.(tx);
        if (opts.burn) await tfa.burnCodes(userId, purpose, now, tx);
        const code = digitCode(random, CODE_DIGITS);
        await tfa.insertEmailCode({ userId, purpose, client: opts.client ?? null, codeHash: sha256Hex(code), now, ttlS: limits.ttlS }, tx);
        return code;
      });
    },

    /**
     * Checks `code` against the user's newest live code of `purpose` without using it up (the caller consumes it with
     * what it changes): one attempt is reserved first, and a day's wrong guesses are capped over all codes.
     */
    async check(userId: number, purpose: CodePurpose, code: string, limits: CodeLimits, invalid: () => ApiError): Promise<ChallengeRow> {
      const now = clock.now();
      const ch = await tfa.latestCode(userId, purpose);
      if (!ch || ch.code_hash === null || (ch.code_expires_at ?? 0) <= now) throw invalid();
      if ((await tfa.codesSince(userId, purpose, now - DAY_S)).guesses >= limits.guessesPerDay) {
        throw new ApiError('rate_limited', 'too many wrong codes for this account today; try again tomorrow', {}, undefined, { 'Retry-After': String(DAY_S) });
      }
      if ((await tfa.claimChallengeAttempt(ch.id)) === undefined) throw invalid();
      if (!safeEqual(sha256Hex(code), ch.code_hash)) throw invalid();
      return ch;
    },

    /** Uses up a checked code in the caller's transaction; false when another request used it first. */
    consume: (ch: ChallengeRow, tx: Tx) => tfa.consumeChallenge(ch.id, clock.now(), tx),
  };
}

export type EmailCodes = ReturnType<typeof emailCodesFactory>;
