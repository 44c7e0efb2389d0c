import { durationText, type Clock } from '../platform/clock.js';
import { safeEqual, sha256Hex, type SecretBox } from '../platform/crypto.js';
import type { Db, Tx } from '../platform/db/connect.js';
import { ApiError } from '../platform/errors.js';
import type { Random } from '../platform/random.js';
import type { UserRow } from '../users/users-contract.js';
import type { TfaCaller } from './tfa-auth.js';
import {
  BACKUP_CODE_ALPHABET, BACKUP_CODES_PER_SET, MSG, TFA_AUTH_WINDOW_S,
} from './tfa-constants.js';
import type { TfaSender, SmsRequest } from './tfa-send.js';
import type { MethodRow, TfaStore } from './tfa-store.js';
import type { TfaVerifier } from './tfa-verify.js';
import type { TfaBodies } from './tfa-schemas.js';
import { defaultLabel, methodObject } from './tfa-view.js';
import { isTotpSecret, newTotpSecret, provisioningUri, verifyTotp } from './totp.js';

export interface TfaServiceDeps {
  db: Db;
  store: TfaStore;
  verifier: TfaVerifier;
  sender: TfaSender;
  clock: Clock;
  random: Random;
  secretBox: SecretBox;
  /** The add-method window check (tfa-window.ts). */
  requireWindow(userId: number): Promise<void>;
}

/** `XXXX-XXXX-XXXX` from the unambiguous alphabet. */
function backupCode(random: Random): string {
  let s = '';
  for (let i = 0; i < 12; i++) s += BACKUP_CODE_ALPHABET[random.int(0, BACKUP_CODE_ALPHABET.length)];
  return `${s.slice(0, 4)}-${s.slice(4, 8)}-${s.slice(8)}`;
}

export function tfaServiceFactory(deps: TfaServiceDeps) {
  const { db, store, verifier, sender, clock, random, secretBox, requireWindow } = deps;

  /** A fresh set of backup codes replaces the old one; the plaintext leaves only in this reply. */
  async function newBackupCodes(userId: number, tx: Tx): Promise<string[]> {
    const codes = Array.from({ length: BACKUP_CODES_PER_SET }, () => backupCode(random));
    await store.softDeleteBackupCodes(userId, clock.now(), tx);
    await store.insertBackupCodes(userId, codes.map((c) => sha256Hex(c)), clock.now(), tx);
    return codes;
  }

  function isAdmin(c: TfaCaller): boolean {
    return c.user.is_admin === 1;
  }

  return {
    requireWindow,

    async status(c: TfaCaller) {
      const now = clock.now();
      const [methods, remaining, account] = await Promise.all([store.listMethods(c.user.id), store.countBackupCodes(c.user.id), store.account(c.user.id)]);
      return {
        success: true,
        tfa_enabled: c.user.tfa_status !== 'disabled',
        methods: methods.map((m) => methodObject(m, now)),
        backup_codes_remaining: remaining,
        new_method_authorized: account?.new_method_until != null && account.new_method_until > now,
      };
    },

    async email(c: TfaCaller, body: TfaBodies['email']) {
      const { secret } = await sender.sendEmailCode(c.user, body.secret, 'verify');
      return { success: true, msg: `a verification code was sent to ${c.user.email}`, secret };
    },

    async sms(c: TfaCaller, body: SmsRequest, resend: boolean) {
      const { secret, phone } = await sender.sendSmsCode(c.user, body, { loggedOut: c.principal === null, resend, purpose: 'verify', isAdmin: isAdmin(c) });
      return { success: true, msg: `a verification code was sent to ${sender.masked(phone)}`, secret };
    },

    async totpSetup(c: TfaCaller) {
      const secret = newTotpSecret(random);
      return { success: true, secret, provisioning_uri: provisioningUri(secret, c.user.email) };
    },

    async authorizeStart(c: TfaCaller, body: TfaBodies['authorizeStart']) {
      if (body.backup_code !== undefined) {
        await verifier.useBackupCode(c.user, body.backup_code);
        await store.upsertAccount(c.user.id, { new_method_until: clock.now() + TFA_AUTH_WINDOW_S });
        return { success: true, msg: `authorized: you may add a 2FA method within the next ${durationText(TFA_AUTH_WINDOW_S)}` };
      }
      const methods = await store.listMethods(c.user.id);
      // Spec: a user with no methods is forced to e-mail (first-time setup).
      let kind = methods.length === 0 ? 'email' : body.tfa_method;
      let method: MethodRow | undefined;
      if (kind !== 'email') {
        method = await verifier.pickMethod(c.user, kind, body.tfa_method_id);
        if (!method) throw new ApiError('not_found', `you have no ${kind} method; choose another tfa_method`);
        kind = method.method as 'sms' | 'totp';
      }
      if (kind === 'email') {
        const { secret } = await sender.sendEmailCode(c.user, undefined, 'authorize');
        return { success: true, secret };
      }
      if (kind === 'sms') {
        const { secret } = await sender.sendSmsCode(c.user, { tfa_method_id: method!.id }, { loggedOut: false, resend: false, purpose: 'authorize', isAdmin: isAdmin(c) });
        return { success: true, secret };
      }
      // TOTP sends nothing: the challenge only binds the PUT step to this method.
      const { secret } = await sender.newChallenge(c.user, 'authorize', { channel: 'totp', method_id: method!.id });
      return { success: true, secret };
    },

    async authorizeFinish(c: TfaCaller, body: TfaBodies['authorizeFinish']) {
      if (!body.code && !body.secret) throw new ApiError('missing_params', 'code and secret are required');
      if (!body.code) throw new ApiError('missing_auth_value', 'code is required');
      if (!body.secret) throw new ApiError('missing_params', 'secret is required');
      const hash = sha256Hex(body.secret);
      const ch = await store.findChallenge(hash);
      // Spec 2FA errors: a secret that names no challenge (of this user) is `challenge_not_found`; one that names a
      // challenge of this user that is not a pending authorization (another purpose, or already used) is
      // `no_pending_authorization`, the PUT step's own code.
      if (!ch || !safeEqual(ch.secret_hash, hash) || ch.user_id !== c.user.id) {
        throw new ApiError('challenge_not_found', 'no challenge matches this secret; start with POST /api/v0/tfa/authorize-new-method/');
      }
      if (ch.purpose !== 'authorize' || ch.consumed_at !== null) {
        throw new ApiError('no_pending_authorization', 'no pending authorization matches this secret; start with POST /api/v0/tfa/authorize-new-method/');
      }
      if (ch.expires_at <= clock.now()) throw new ApiError('2fa_expired', 'the authorization challenge has expired; start again');
      await verifier.checkChallenge(ch, body.code, '2fa_verification_failed');
      await store.upsertAccount(c.user.id, { new_method_until: clock.now() + TFA_AUTH_WINDOW_S });
      return { success: true, msg: `authorized: you may add a 2FA method within the next ${durationText(TFA_AUTH_WINDOW_S)}` };
    },

    async confirmNew(c: TfaCaller, body: TfaBodies['confirmNew'], legacyCheck = false) {
      const user = c.user;
      if (legacyCheck && user.tfa_status === 'legacy') {
        throw new ApiError('untracked_2fa_found', 'this account has untracked (legacy) 2FA: regenerate backup codes first (PUT /api/v0/tfa/regen-backup-codes/)');
      }
      const kind = body.tfa_method;
      if (kind === 'email') throw new ApiError('invalid_tfa_method', 'e-mail cannot be added as a 2FA method');
      if (kind !== 'sms' && kind !== 'totp') throw new ApiError('missing_params', 'tfa_method (sms or totp) is required');
      if (!body.code || !body.secret) throw new ApiError('missing_params', 'code and secret are required');
      await requireWindow(user.id);
      const existing = await store.listMethods(user.id);
      const now = clock.now();
      let row: { phone_number: string | null; totp_secret: string | null; last_totp_step: number | null };
      if (kind === 'totp') {
        const secret = body.secret.toUpperCase();
        if (!isTotpSecret(secret)) throw new ApiError('bad_request', 'body.secret must be the base32 secret from POST /api/v0/tfa/totp-setup/');
        if (existing.some((m) => m.method === 'totp' && m.totp_secret !== null && safeEqual(secretBox.open(m.totp_secret) ?? '', secret))) {
          throw new ApiError('duplicate_tfa_method', 'this authenticator secret is already configured');
        }
        const step = verifyTotp(secret, body.code, now, null);
        if (step === null) throw new ApiError('2fa_verification_failed', 'wrong code for this TOTP secret', { fail_count: 0, locked_until: null });
        row = { phone_number: null, totp_secret: secretBox.seal(secret), last_totp_step: step };
      } else {
        const phone = body.phone_number;
        if (!phone) throw new ApiError('missing_phone_number', 'phone_number is required to add an SMS method');
        if (existing.some((m) => m.method === 'sms' && m.phone_number === phone)) throw new ApiError('duplicate_tfa_method', 'this number is already an SMS method');
        const ch = await verifier.challengeFor(user, body.secret, ['setup', 'verify']);
        if (ch.channel !== 'sms') throw new ApiError('challenge_not_found', 'this secret is not an SMS challenge');
        if (ch.phone_number !== phone) throw new ApiError('phone_number_mismatch', 'phone_number differs from the number the code was sent to');
        await verifier.checkChallenge(ch, body.code, '2fa_verification_failed');
        row = { phone_number: phone, totp_secret: null, last_totp_step: null };
      }
      return db.transaction().execute(async (tx) => {
        const first = (await store.listMethods(user.id, tx)).length === 0;
        await store.insertMethod(
          { user_id: user.id, method: kind, label: body.label ?? defaultLabel(kind, row.phone_number), ...row, is_primary: first ? 1 : 0, fail_count: 0, created_at: now, last_used: null },
          tx,
        );
        const msg = kind === 'sms' ? MSG.smsAdded : MSG.totpAdded;
        if (!first) return { success: true, msg };
        await store.setTfaStatus(user.id, 'enabled', tx);
        return { success: true, msg, backup_codes: await newBackupCodes(user.id, tx) };
      });
    },

    async update(c: TfaCaller, body: TfaBodies['update']) {
      if (body.tfa_method === 'email') throw new ApiError('invalid_tfa_method', 'e-mail is not a stored 2FA method');
      if (body.tfa_method_id === undefined && body.tfa_method === undefined) throw new ApiError('missing_params', 'tfa_method_id or tfa_method is required');
      const m = await verifier.pickMethod(c.user, body.tfa_method, body.tfa_method_id);
      if (!m) throw new ApiError('not_found', `you have no ${body.tfa_method} method`);
      const methods = await store.listMethods(c.user.id);
      if (body.is_primary === false && m.is_primary === 1 && methods.length === 1) {
        throw new ApiError('bad_request', 'your only 2FA method stays primary');
      }
      await db.transaction().execute(async (tx) => {
        if (body.label !== undefined) await store.updateMethod(m.id, { label: body.label }, tx);
        if (body.is_primary === true) {
          await store.clearPrimary(c.user.id, tx);
          await store.updateMethod(m.id, { is_primary: 1 }, tx);
        } else if (body.is_primary === false && m.is_primary === 1) {
          await store.updateMethod(m.id, { is_primary: 0 }, tx);
          await store.updateMethod(methods.find((x) => x.id !== m.id)!.id, { is_primary: 1 }, tx);
        }
      });
      const fresh = (await store.findMethodById(m.id))!;
      return { success: true, msg: '2FA method updated', method: methodObject(fresh, clock.now()) };
    },

    async remove(c: TfaCaller, body: TfaBodies['remove']) {
      const user = c.user;
      if (body.backup_code !== undefined && body.target_id === undefined) throw new ApiError('missing_params', 'target_id is required with backup_code');
      const verified = await verifier.verifyFactor(user, body, '2fa_verification_failed', ['verify', 'login']);
      if (user.tfa_status === 'legacy' && (await store.listMethods(user.id)).length === 0) {
        await store.setTfaStatus(user.id, 'disabled');
        return { msg: MSG.lastRemoved };
      }
      const targetId = body.target_id ?? verified.method?.id;
      if (targetId === undefined) throw new ApiError('missing_params', 'target_id is required when verifying by e-mail');
      const target = await store.findMethod(user.id, targetId);
      if (!target) throw new ApiError('not_found', `target_id ${targetId} matches no 2FA method of yours`);
      return db.transaction().execute(async (tx) => {
        await store.deleteMethod(target.id, tx);
        const rest = await store.listMethods(user.id, tx);
        if (rest.length === 0) {
          await store.setTfaStatus(user.id, 'disabled', tx);
          await store.softDeleteBackupCodes(user.id, clock.now(), tx);
          return { msg: MSG.lastRemoved };
        }
        if (target.is_primary === 1) await store.updateMethod(rest[0].id, { is_primary: 1 }, tx);
        return { msg: `${target.method === 'sms' ? 'SMS' : 'TOTP'} 2FA method removed`, remaining_methods: rest.length };
      });
    },

    async regenBackupCodes(c: TfaCaller, body: TfaBodies['regen']) {
      const user: UserRow = c.user;
      if (user.tfa_status === 'disabled') throw new ApiError('bad_request', '2FA is not enabled on this account; add a method first');
      await verifier.verifyFactor(user, body, '2fa_verification_failed', ['verify', 'login']);
      return db.transaction().execute(async (tx) => {
        const methods = await store.listMethods(user.id, tx);
        // Legacy accounts (2FA on, a number on file, no method rows) get their SMS method backfilled here.
        if (user.tfa_status === 'legacy' && methods.length === 0 && user.phone_number) {
          await store.insertMethod(
            { user_id: user.id, method: 'sms', label: defaultLabel('sms', user.phone_number), phone_number: user.phone_number, totp_secret: null, last_totp_step: null, is_primary: 1, fail_count: 0, created_at: clock.now(), last_used: null },
            tx,
          );
          await store.setTfaStatus(user.id, 'enabled', tx);
        }
        return { success: true, msg: 'new backup codes generated; the old ones no longer work', backup_codes: await newBackupCodes(user.id, tx) };
      });
    },
  };
}

export type TfaService = ReturnType<typeof tfaServiceFactory>;
