import { durationText, type Clock } from '../platform/clock.js';
import { safeEqual, sha256Hex, type SecretBox } from '../platform/crypto.js';
import { ApiError } from '../platform/errors.js';
import type { UserRow } from '../users/users-contract.js';
import { TFA_CHALLENGE_MAX_ATTEMPTS, TFA_CHALLENGE_TTL_S } from './tfa-constants.js';
import type { ChallengeRow, MethodRow, TfaStore } from './tfa-store.js';
import type { TfaBodies } from './tfa-schemas.js';
import { verifyTotp } from './totp.js';

export type FailCode = '2fa_login_failed' | '2fa_verification_failed';
export type TfaKind = 'sms' | 'totp' | 'email';

/** The verification fields shared by login, DELETE and regen-backup-codes (spec bodies; tfa-schemas.ts Factor). */
export type FactorInput = TfaBodies['regen'];

export interface Verified {
  via: 'backup' | TfaKind;
  method: MethodRow | null;
  challenge: ChallengeRow | null;
}

/** Backup codes as typed: case and spaces do not matter, the dashes are optional. */
export function normalizeBackupCode(code: string): string | null {
  const plain = code.toUpperCase().replace(/[\s-]/g, '');
  return /^[A-Z0-9]{12}$/.test(plain) ? `${plain.slice(0, 4)}-${plain.slice(4, 8)}-${plain.slice(8)}` : null;
}

export function tfaVerifier({ store, clock, secretBox }: { store: TfaStore; clock: Clock; secretBox: SecretBox }) {
  async function lockedError(methodId: number): Promise<ApiError> {
    const m = await store.findMethodById(methodId);
    const until = m?.locked_until ?? clock.now();
    return new ApiError(
      'tfa_locked',
      'this 2FA method is locked after too many failed attempts; wait for the lock to end or use another method',
      { fail_count: m?.fail_count ?? 0, locked_until: until },
      undefined,
      { 'Retry-After': String(Math.max(1, Math.ceil(until - clock.now()))) },
    );
  }

  /**
   * Runs `check` on one reserved attempt of a method: a wrong code keeps the attempt (and may lock the method), a
   * right one clears the count, and anything thrown gives the attempt back (a server error never costs a try).
   */
  async function onMethodAttempt(method: MethodRow, failCode: FailCode, check: () => Promise<boolean>): Promise<void> {
    const claim = await store.claimMethodAttempt(method.id, clock.now());
    if (!claim) throw await lockedError(method.id);
    let ok: boolean;
    try {
      ok = await check();
    } catch (err) {
      await store.refundMethodAttempt(method.id);
      throw err;
    }
    if (!ok) {
      throw new ApiError(failCode, 'wrong or already used code', { fail_count: claim.fail_count, locked_until: claim.locked_until });
    }
    await store.methodSucceeded(method.id, clock.now());
  }

  async function checkTotp(method: MethodRow, code: string, failCode: FailCode): Promise<void> {
    const secret = method.totp_secret === null ? null : secretBox.open(method.totp_secret);
    if (secret === null) {
      throw new ApiError('tfa_method_not_configured', 'this TOTP method cannot be used (its secret is missing or unreadable); set it up again');
    }
    await onMethodAttempt(method, failCode, async () => {
      const step = verifyTotp(secret, code, clock.now(), method.last_totp_step);
      return step !== null && (await store.acceptTotpStep(method.id, step, clock.now()));
    });
  }

  /**
   * Checks `code` against a live challenge and consumes it. A code sent for a method counts against that method's
   * lockout; a method-less challenge (e-mail code, code to a new number) takes a few tries and is then burnt.
   */
  async function checkChallenge(ch: ChallengeRow, code: string, failCode: FailCode): Promise<MethodRow | null> {
    const now = clock.now();
    if (ch.consumed_at !== null) throw new ApiError('no_challenge_found', 'this challenge was already used; request a new code');
    if (ch.channel === 'totp') {
      const method = ch.method_id === null ? undefined : await store.findMethodById(ch.method_id);
      if (!method) throw new ApiError('tfa_method_not_configured', 'the TOTP method of this challenge no longer exists');
      await checkTotp(method, code, failCode);
      if (!(await store.consumeChallenge(ch.id, now))) throw new ApiError('no_challenge_found', 'this challenge was already used');
      return method;
    }
    if (ch.code_hash === null || ch.code_expires_at === null) throw new ApiError('no_challenge_found', 'no code was sent for this secret yet');
    if (ch.code_expires_at <= now) throw new ApiError('2fa_expired', `the code has expired (codes are valid ${durationText(TFA_CHALLENGE_TTL_S)}); request a new one`);
    const matches = async () => {
      const given = sha256Hex(code);
      if (!safeEqual(given, ch.code_hash!)) return false;
      return store.consumeChallenge(ch.id, clock.now());
    };
    const method = ch.method_id === null ? undefined : await store.findMethodById(ch.method_id);
    if (method) {
      await onMethodAttempt(method, failCode, matches);
      return method;
    }
    const tries = await store.claimChallengeAttempt(ch.id);
    if (tries === undefined) throw new ApiError(failCode, 'too many wrong codes for this challenge; request a new code', { fail_count: TFA_CHALLENGE_MAX_ATTEMPTS, locked_until: null });
    let ok: boolean;
    try {
      ok = await matches();
    } catch (err) {
      await store.refundChallengeAttempt(ch.id);
      throw err;
    }
    if (!ok) throw new ApiError(failCode, 'wrong code', { fail_count: tries, locked_until: null });
    return null;
  }

  /** Verifies and uses up a backup code (one use each; of two parallel uses only one wins). */
  async function useBackupCode(user: UserRow, code: string): Promise<void> {
    const normal = normalizeBackupCode(code);
    const hash = sha256Hex(normal ?? code);
    const row = normal === null ? undefined : await store.findLiveBackupCode(user.id, hash);
    if (!row || !safeEqual(row.code_hash, hash) || !(await store.useBackupCode(row.id, clock.now()))) {
      throw new ApiError('invalid_backup_code', 'invalid or already used backup code');
    }
  }

  /** The user's method of `kind` named by `id`, or the only (else the primary) one of that kind. */
  async function pickMethod(user: UserRow, kind: 'sms' | 'totp' | undefined, id: number | undefined): Promise<MethodRow | undefined> {
    if (id !== undefined) {
      const m = await store.findMethod(user.id, id);
      if (!m) throw new ApiError('not_found', `tfa_method_id ${id} matches no 2FA method of yours`);
      if (kind && m.method !== kind) throw new ApiError('invalid_tfa_method', `2FA method ${id} is ${m.method}, not ${kind}`);
      return m;
    }
    const all = (await store.listMethods(user.id)).filter((m) => !kind || m.method === kind);
    if (all.length <= 1) return all[0];
    const primary = all.find((m) => m.is_primary === 1);
    if (primary) return primary;
    throw new ApiError('bad_request', `you have several ${kind ? `${kind} ` : ''}methods: give tfa_method_id`);
  }

  /** Finds the challenge a `secret` names, for this user. */
  async function challengeFor(user: UserRow, secret: string, purposes: string[]): Promise<ChallengeRow> {
    const hash = sha256Hex(secret);
    const ch = await store.findChallenge(hash);
    if (!ch || !safeEqual(ch.secret_hash, hash) || ch.user_id !== user.id || !purposes.includes(ch.purpose)) {
      throw new ApiError('challenge_not_found', 'no challenge matches this secret');
    }
    return ch;
  }

  /** Verifies one factor (backup code, TOTP, or an SMS / e-mail code by its challenge secret). */
  async function verifyFactor(user: UserRow, input: FactorInput, failCode: FailCode, purposes: string[]): Promise<Verified> {
    if (input.backup_code !== undefined) {
      await useBackupCode(user, input.backup_code);
      return { via: 'backup', method: null, challenge: null };
    }
    if (input.code === undefined || input.code === '') throw new ApiError('missing_auth_value', 'code (or backup_code) is required');
    let kind: TfaKind = input.tfa_method ?? 'sms';
    if (input.tfa_method === undefined && input.tfa_method_id !== undefined) {
      kind = ((await pickMethod(user, undefined, input.tfa_method_id))?.method as TfaKind) ?? 'sms';
    }
    if (kind === 'totp') {
      const method = await pickMethod(user, 'totp', input.tfa_method_id);
      if (!method) throw new ApiError('tfa_method_not_configured', 'you have no TOTP method; use another method or set one up');
      await checkTotp(method, input.code, failCode);
      return { via: 'totp', method, challenge: null };
    }
    if (input.secret === undefined || input.secret === '') throw new ApiError('missing_params', `secret is required with a ${kind} code`);
    const ch = await challengeFor(user, input.secret, purposes);
    if (ch.channel !== null && ch.channel !== kind) throw new ApiError(failCode, `the code for this secret was not sent by ${kind}`);
    if (input.tfa_method_id !== undefined && ch.method_id !== input.tfa_method_id) {
      throw new ApiError(failCode, 'this challenge was not sent for that tfa_method_id');
    }
    const method = await checkChallenge(ch, input.code, failCode);
    return { via: kind, method, challenge: ch };
  }

  return { verifyFactor, checkChallenge, checkTotp, useBackupCode, pickMethod, challengeFor };
}

export type TfaVerifier = ReturnType<typeof tfaVerifier>;
