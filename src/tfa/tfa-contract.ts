/**
 * What login uses of 2FA (login depends on 2FA, never the other way: docs/DEVELOPING.md): the second step of a
 * login, and the codes e-mailed for sign-up and password reset, which are rows of 2FA's `tfa_challenges`. 2FA builds
 * it over its store and verifier (tfa-wiring.ts); the SQL stays in tfa-store.ts.
 */
import { sha256Hex } from '../platform/crypto.js';
import type { Tx } from '../platform/db/connect.js';
import { secretToken, type Random } from '../platform/random.js';
import { TFA_LOGIN_SECRET_TTL_S, TFA_SECRET_PREFIX } from './tfa-constants.js';
import type { TfaStore } from './tfa-store.js';
import type { TfaVerifier } from './tfa-verify.js';
import { methodObject, type MethodObject } from './tfa-view.js';

export type { ChallengeRow } from './tfa-store.js';
export type { TfaAuthenticator, TfaCaller } from './tfa-auth.js';

/** A code e-mailed to prove someone reads an address (login's email-codes.ts decides when one may be made). */
export interface NewEmailCode {
  userId: number;
  purpose: 'email_verify' | 'password_reset';
  /** Marks how the code came about (login's TAKEOVER), or null. */
  client: string | null;
  codeHash: string;
  now: number;
  ttlS: number;
}

export function tfaForLogin({ store, verifier, random }: { store: TfaStore; verifier: TfaVerifier; random: Random }) {
  return {
    /**
     * A password login of a user with 2FA on waits for the second factor: a `tfa_secret` (shown once, its SHA-256
     * stored) stands in for a key for TFA_LOGIN_SECRET_TTL_S; the user's methods say which factors to offer.
     */
    async startLogin(userId: number, client: string, now: number): Promise<{ secret: string; methods: MethodObject[] }> {
      const secret = secretToken(random, TFA_SECRET_PREFIX);
      await store.insertChallenge({ user_id: userId, secret_hash: sha256Hex(secret), purpose: 'login', client, created_at: now, expires_at: now + TFA_LOGIN_SECRET_TTL_S });
      const methods = (await store.listMethods(userId)).map((m) => methodObject(m, now));
      return { secret, methods };
    },
    /** Checks one second factor of the user (backup code, TOTP, or a sent code by its challenge's secret). */
    verifyFactor: verifier.verifyFactor,
    /** Uses up a challenge (a login's, an e-mailed code's) once; false when another request used it first. */
    consumeChallenge: store.consumeChallenge,
    /** The user's unused backup codes. */
    countBackupCodes: store.countBackupCodes,

    // ---- e-mailed codes
    /** Stores a new e-mailed code. Its challenge gets a secret nobody is shown: the code alone, with the address, is used. */
    async insertEmailCode(c: NewEmailCode, tx?: Tx) {
      return store.insertChallenge({
        user_id: c.userId, secret_hash: sha256Hex(secretToken(random, TFA_SECRET_PREFIX)), purpose: c.purpose, channel: 'email', client: c.client,
        code_hash: c.codeHash, last_sent_at: c.now, code_expires_at: c.now + c.ttlS, expires_at: c.now + c.ttlS, created_at: c.now,
      }, tx);
    },
    latestCode: store.latestCode,
    codesSince: store.codesSince,
    burnCodes: store.burnCodes,
    claimChallengeAttempt: store.claimChallengeAttempt,
  };
}

export type TfaForLogin = ReturnType<typeof tfaForLogin>;
