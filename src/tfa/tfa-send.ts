import { durationText, type Clock } from '../platform/clock.js';
import { sha256Hex } from '../platform/crypto.js';
import type { Db } from '../platform/db/connect.js';
import { ApiError } from '../platform/errors.js';
import { digitCode, secretToken, type Random } from '../platform/random.js';
import type { Messenger } from '../messages/messages-service.js';
import type { UserRow } from '../users/users-contract.js';
import {
  CODE_DIGITS, DAY_S, HOUR_S, PREAUTH_PHONE_CAP_PER_DAY, SMS_BLOCKED_PREFIXES, SMS_FRAUD_DISTINCT_NUMBERS_PER_DAY,
  SMS_MAX_PER_ACCOUNT_PER_HOUR, SMS_MAX_PER_NUMBER_PER_HOUR, SMS_RECENT_CODE_S, SMS_RESEND_MIN_INTERVAL_S, TFA_CHALLENGE_TTL_S,
  TFA_SECRET_PREFIX,
} from './tfa-constants.js';
import type { ChallengeRow, MethodRow, TfaStore } from './tfa-store.js';
import type { TfaVerifier } from './tfa-verify.js';
import type { TfaBodies } from './tfa-schemas.js';
import { maskPhone } from './tfa-view.js';

/** Emulator fault (`POST /_emu/faults`): the next `count` challenges cannot be stored (challenge_creation_failed). */
export const CHALLENGE_STORE_FAULT = 'challenge_store_error';

export interface SendDeps {
  db: Db;
  store: TfaStore;
  verifier: TfaVerifier;
  messenger: Messenger;
  clock: Clock;
  random: Random;
  /** The add-method window check (an "authorization gate"). */
  requireWindow(userId: number): Promise<void>;
  /** The CHALLENGE_STORE_FAULT port: true when the next challenge is to fail to store (wired in emulator mode only). */
  challengeStoreFails?(): Promise<boolean>;
}

export type SmsRequest = TfaBodies['sms'];

const rateLimited = (msg: string, retryAfter: number) =>
  new ApiError('sms_rate_limited', msg, {}, undefined, { 'Retry-After': String(Math.max(1, Math.ceil(retryAfter))) });

/** Sending SMS and e-mail codes, with the abuse limits of SMS. */
export function tfaSender({ db, store, verifier, messenger, clock, random, requireWindow, challengeStoreFails }: SendDeps) {
  /** A live challenge of this user named by `secret` (not yet used, not expired). */
  async function liveChallenge(user: UserRow, secret: string): Promise<ChallengeRow> {
    const ch = await verifier.challengeFor(user, secret, ['login', 'verify', 'authorize', 'setup']);
    if (ch.consumed_at !== null) throw new ApiError('no_challenge_found', 'this challenge was already used; start again');
    if (ch.expires_at <= clock.now()) throw new ApiError('2fa_expired', 'this challenge has expired; start again');
    return ch;
  }

  async function newChallenge(user: UserRow, purpose: string, fields: Partial<ChallengeRow> = {}): Promise<{ ch: ChallengeRow; secret: string }> {
    const secret = secretToken(random, TFA_SECRET_PREFIX);
    const now = clock.now();
    try {
      if (challengeStoreFails && (await challengeStoreFails())) throw new Error('emulator fault: the challenge store failed');
      const ch = await store.insertChallenge({
        user_id: user.id, secret_hash: sha256Hex(secret), purpose, created_at: now, expires_at: now + TFA_CHALLENGE_TTL_S, ...fields,
      });
      return { ch, secret };
    } catch {
      throw new ApiError('challenge_creation_failed', 'the challenge could not be created; retry');
    }
  }

  /** E-mail a code: onto the challenge `secret` names, or a fresh one (`purpose`) when none is given. */
  async function sendEmailCode(user: UserRow, secret: string | undefined, purpose: string): Promise<{ secret: string }> {
    if (!user.email) throw new ApiError('missing_email', 'this account has no e-mail address');
    if (user.email_verified_at === null) throw new ApiError('email_not_verified', 'verify your e-mail address before codes can be sent to it');
    const code = digitCode(random, CODE_DIGITS);
    const now = clock.now();
    const set = { channel: 'email', code_hash: sha256Hex(code), method_id: null, phone_number: null, last_sent_at: now, code_expires_at: now + TFA_CHALLENGE_TTL_S };
    let out: string;
    if (secret !== undefined) {
      const ch = await liveChallenge(user, secret);
      await store.setChallengeCode(ch.id, set);
      out = secret;
    } else {
      out = (await newChallenge(user, purpose, set)).secret;
    }
    await messenger.sendEmail({
      to: user.email,
      subject: 'Your gpuplane verification code',
      text: `Your gpuplane verification code is ${code}. It expires in ${durationText(TFA_CHALLENGE_TTL_S)}. If you did not ask for it, ignore this e-mail.`,
      code,
    });
    return { secret: out };
  }

  /** Where an SMS goes: a method of the user, the number on file (legacy), or a new number (pre-authorization). */
  async function smsTarget(user: UserRow, req: SmsRequest, loggedOut: boolean): Promise<{ phone: string; method: MethodRow | null; preauth: boolean }> {
    if (req.tfa_method_id !== undefined) {
      const m = await verifier.pickMethod(user, 'sms', req.tfa_method_id);
      if (req.phone_number !== undefined && req.phone_number !== m!.phone_number) {
        throw new ApiError('phone_number_mismatch', 'phone_number differs from the number of that method');
      }
      return { phone: m!.phone_number!, method: m!, preauth: false };
    }
    const sms = (await store.listMethods(user.id)).filter((m) => m.method === 'sms');
    if (req.phone_number !== undefined) {
      const m = sms.find((x) => x.phone_number === req.phone_number);
      if (m) return { phone: m.phone_number!, method: m, preauth: false };
      if (req.phone_number === user.phone_number) return { phone: req.phone_number, method: null, preauth: false };
      // Logged out, codes go only to numbers already on the account.
      if (loggedOut) throw new ApiError('phone_number_mismatch', 'this number is not one of your 2FA numbers');
      return { phone: req.phone_number, method: null, preauth: true };
    }
    const m = sms.find((x) => x.is_primary === 1) ?? sms[0];
    if (m) return { phone: m.phone_number!, method: m, preauth: false };
    if (user.phone_number) return { phone: user.phone_number, method: null, preauth: false };
    throw new ApiError('missing_phone_number', 'phone_number is required: no number is on this account');
  }

  /**
   * Block list, fraud flag and rate limits, and the send reserved under them: counting the recent sends and recording
   * this one happen in one transaction, serialized per account and per number (`lockSmsCounters`), so concurrent
   * requests cannot all pass a limit that only one of them fits under (as `onMethodAttempt` reserves an attempt).
   * Returns the reservation, to give back if the message is not sent.
   */
  async function reserveSms(user: UserRow, phone: string, preauth: boolean): Promise<number> {
    const now = clock.now();
    if (SMS_BLOCKED_PREFIXES.some((p) => phone.startsWith(p))) {
      throw new ApiError('sms_blocked_number', 'this number cannot receive verification codes (high SMS-pumping risk); use another number or TOTP');
    }
    const outcome = await db.transaction().execute(async (tx): Promise<{ id: number } | { fraud: true }> => {
      await store.lockSmsCounters(user.id, phone, tx);
      const counts = await store.smsCounts(user.id, phone, now - HOUR_S, now - DAY_S, tx);
      if (counts.byUser >= SMS_MAX_PER_ACCOUNT_PER_HOUR) throw rateLimited('too many SMS codes requested from this account; wait and retry', HOUR_S);
      if (counts.byNumber >= SMS_MAX_PER_NUMBER_PER_HOUR) throw rateLimited('too many SMS codes sent to this number; wait and retry', HOUR_S);
      if (preauth && counts.preauthByNumber >= PREAUTH_PHONE_CAP_PER_DAY) {
        throw new ApiError('preauth_phone_cap', 'this number was used in too many authorization attempts; try again tomorrow or use another number', {}, undefined, { 'Retry-After': String(DAY_S) });
      }
      const numbers = new Set(await store.distinctNumbersSince(user.id, now - DAY_S, tx));
      numbers.add(phone);
      if (numbers.size >= SMS_FRAUD_DISTINCT_NUMBERS_PER_DAY) {
        // Codes to many different numbers in a day is the signature of SMS pumping: SMS stays off until support clears it.
        await store.upsertAccount(user.id, { sms_fraud_at: now }, tx);
        return { fraud: true };
      }
      return { id: await store.recordSms(user.id, phone, preauth, now, tx) };
    });
    if ('fraud' in outcome) throw fraud();
    return outcome.id;
  }

  const fraud = () => new ApiError('sms_fraud_detected', 'SMS is disabled on this account pending a fraud review; contact support or use TOTP');

  /**
   * Sends an SMS code. `resend` keeps the challenge `secret` names (and its number) and only needs the resend spacing;
   * a first send refuses while a recent code to that number is still live (`tfa_challenge_exists`).
   */
  async function sendSmsCode(
    user: UserRow,
    req: SmsRequest,
    opts: { loggedOut: boolean; resend: boolean; purpose: string; isAdmin: boolean },
  ): Promise<{ secret: string; phone: string }> {
    const now = clock.now();
    const account = await store.account(user.id);
    if (account?.sms_fraud_at) throw fraud();
    if (user.email_verified_at === null && !opts.isAdmin) throw new ApiError('email_not_verified', 'verify your e-mail address before SMS codes can be sent');

    let existing: ChallengeRow | null = null;
    let target: { phone: string; method: MethodRow | null; preauth: boolean };
    if (req.secret !== undefined) existing = await liveChallenge(user, req.secret);
    if (opts.resend && existing) {
      if (existing.channel !== 'sms' || existing.phone_number === null) throw new ApiError('no_challenge_found', 'no SMS code was sent for this secret; use POST /api/v0/tfa/sms/');
      if ((req.phone_number !== undefined && req.phone_number !== existing.phone_number) || (req.tfa_method_id !== undefined && req.tfa_method_id !== existing.method_id)) {
        throw new ApiError('phone_number_mismatch', 'phone_number differs from the number of the original challenge');
      }
      const method = existing.method_id === null ? null : ((await store.findMethodById(existing.method_id)) ?? null);
      target = { phone: existing.phone_number, method, preauth: existing.purpose === 'setup' };
      const since = now - (existing.last_sent_at ?? 0);
      if (since < SMS_RESEND_MIN_INTERVAL_S) throw rateLimited(`wait ${Math.ceil(SMS_RESEND_MIN_INTERVAL_S - since)} s before asking for another code`, SMS_RESEND_MIN_INTERVAL_S - since);
    } else {
      target = await smsTarget(user, req, opts.loggedOut);
      if (existing && existing.purpose !== 'login' && target.preauth !== (existing.purpose === 'setup')) {
        throw new ApiError('phone_number_mismatch', 'this secret belongs to a challenge for another number');
      }
      if (!opts.resend) {
        const last = await store.lastSmsTo(user.id, target.phone);
        if (last && last.last_sent_at !== null && now - last.last_sent_at < SMS_RECENT_CODE_S && (last.code_expires_at ?? 0) > now) {
          throw new ApiError('tfa_challenge_exists', 'a code was sent to this number moments ago; use POST /api/v0/tfa/sms/resend/ to get another');
        }
      }
    }
    if (target.preauth) await requireWindow(user.id);
    const reservation = await reserveSms(user, target.phone, target.preauth);

    const code = digitCode(random, CODE_DIGITS);
    // A failed send gives its reservation back: it neither counts against the limits nor leaves a usable challenge.
    try {
      await messenger.sendSms({ to: target.phone, text: `Your gpuplane verification code is ${code}. It expires in ${durationText(TFA_CHALLENGE_TTL_S)}.`, code });
    } catch (err) {
      await store.unrecordSms(reservation);
      throw err;
    }
    const set = {
      channel: 'sms', code_hash: sha256Hex(code), phone_number: target.phone, method_id: target.method?.id ?? null,
      last_sent_at: now, code_expires_at: now + TFA_CHALLENGE_TTL_S,
    };
    return db.transaction().execute(async (tx) => {
      if (existing) {
        await store.setChallengeCode(existing.id, set, tx);
        return { secret: req.secret!, phone: target.phone };
      }
      const purpose = target.preauth ? 'setup' : opts.purpose;
      const secret = secretToken(random, TFA_SECRET_PREFIX);
      await store.insertChallenge({ user_id: user.id, secret_hash: sha256Hex(secret), purpose, created_at: now, expires_at: now + TFA_CHALLENGE_TTL_S, ...set }, tx);
      return { secret, phone: target.phone };
    });
  }

  return { sendEmailCode, sendSmsCode, newChallenge, liveChallenge, masked: maskPhone };
}

export type TfaSender = ReturnType<typeof tfaSender>;
