import { durationText, type Clock } from '../platform/clock.js';
import type { Db } from '../platform/db/connect.js';
import type { DialectName } from '../platform/db/migrations.js';
import { hashPassword, verifyPassword } from '../platform/crypto.js';
import { ApiError } from '../platform/errors.js';
import type { Principal } from '../platform/auth.js';
import type { Random } from '../platform/random.js';
import type { Messenger } from '../messages/messages-service.js';
import { usersContract } from '../users/users-contract.js';
import type { UsersLookup } from '../users/users-contract.js';
import type { TfaForLogin } from '../tfa/tfa-contract.js';
import type { Static } from 'typebox';
import type { EmailCodes } from './email-codes.js';
import type { LoginThrottle } from './login-throttle.js';
import { PASSWORD_RESET_PER_DAY, PASSWORD_RESET_PER_HOUR, PASSWORD_RESET_TTL_S, EMAIL_VERIFY_GUESSES_PER_DAY } from './login-constants.js';
import type { ChangePasswordBody, ResetPasswordBody, ResetRequestBody } from './login-schemas.js';
import type { Sessions } from './sessions.js';

const LIMITS = { ttlS: PASSWORD_RESET_TTL_S, perDay: PASSWORD_RESET_PER_DAY, perHour: PASSWORD_RESET_PER_HOUR, guessesPerDay: EMAIL_VERIFY_GUESSES_PER_DAY };

export interface PasswordsDeps {
  db: Db;
  dialect: DialectName;
  users: Pick<UsersLookup, 'findByEmail'>;
  codes: EmailCodes;
  throttle: LoginThrottle;
  tfa: Pick<TfaForLogin, 'verifyFactor'>;
  sessions: Sessions;
  messenger: Messenger;
  clock: Clock;
  random: Random;
  publicUrl: string;
}

/**
 * A person gets back into their account (issue 29 item 7): a password change (the current password, and the second
 * factor when 2FA is on; the other sessions end), and a reset by a code e-mailed to the address (limited, expiring,
 * one use; every session ends). Neither the request for a reset code nor a wrong code says whether an address has an
 * account. Passwords are stored as scrypt hashes only, and never logged.
 */
export function passwordsFactory(deps: PasswordsDeps) {
  const { db, dialect, users, codes, throttle, tfa, sessions, messenger, clock, random } = deps;
  const invalid = () => new ApiError('bad_request', 'invalid or expired reset code');

  /** Sets the new password, forgets the addresses the account trusted, and tells the owner by e-mail. */
  async function replace(userId: number, email: string, password: string, consume?: Parameters<EmailCodes['consume']>[0]): Promise<void> {
    const hash = await hashPassword(password, random);
    await db.transaction().execute(async (tx) => {
      await usersContract.lock(tx, userId, dialect);
      if (consume && !(await codes.consume(consume, tx))) throw invalid();
      await usersContract.setPasswordHash(tx, userId, hash);
    });
    await throttle.forgetSources(email);
    await messenger.sendEmail({
      to: email,
      subject: 'Your gpuplane password was changed',
      text: `The password of your gpuplane account ${email} was just changed. If that was not you, reset it at ${deps.publicUrl}/reset-password and turn on two-factor authentication.`,
      code: null,
    }).catch(() => undefined); // a courtesy: the change is made whether the mail goes or not
  }

  return {
    /** Always the same reply: it does not tell which addresses have accounts. */
    async requestReset(body: Static<typeof ResetRequestBody>) {
      const user = await users.findByEmail(body.email);
      // Only a verified address: an unverified account is verified first (its own code), never reset around it.
      if (user && user.email_verified_at !== null) {
        const code = await codes.issue(user.id, 'password_reset', LIMITS, { burn: true });
        if (code !== null) {
          await messenger.sendEmail({
            to: user.email,
            subject: 'Reset your gpuplane password',
            text: [
              `Your gpuplane password reset code is ${code}. It is valid for ${durationText(PASSWORD_RESET_TTL_S)} and works once.`,
              '',
              `Enter it at ${deps.publicUrl}/reset-password with a new password.`,
              `From a terminal: gpuplane reset password --email ${user.email} --code ${code}`,
              '',
              'If you did not ask for it, ignore this message: your password stays as it is.',
            ].join('\n'),
            code,
          });
        }
      }
      return { success: true, msg: `if ${body.email} has an account, a reset code is on its way; it is valid for ${durationText(PASSWORD_RESET_TTL_S)}` };
    },

    /** The code from the mail and a new password: every session of the account ends (whoever had the old password). */
    async reset(body: Static<typeof ResetPasswordBody>) {
      const user = await users.findByEmail(body.email);
      if (!user || user.email_verified_at === null) throw invalid();
      const ch = await codes.check(user.id, 'password_reset', body.code, LIMITS, invalid);
      await replace(user.id, user.email, body.new_password, ch);
      const ended = await sessions.endAllOf(user.id);
      const tfa = user.tfa_status !== 'disabled' ? ' (your second factor is still asked for at login)' : '';
      return { success: true, msg: `password changed; ${ended} session${ended === 1 ? '' : 's'} ended; log in with the new password${tfa}` };
    },

    /**
     * A change by a signed-in user: the current password (throttled as a login is, since a stolen session could
     * otherwise guess it) and, with 2FA on, a second factor. Other sessions end; the one in use stays.
     */
    async change(p: Principal, body: Static<typeof ChangePasswordBody>, source: string) {
      const user = p.user;
      // A key may not set a first password: a key limited to user_write would become a full login. The operator does.
      if (user.password_hash === null) throw new ApiError('permission_denied', 'this account has no password yet: the operator sets one with gpuplane admin set-password, on the server\'s machine');
      const gate = await throttle.reserve(user.email, source);
      let ok: boolean;
      try {
        ok = await verifyPassword(body.current_password, user.password_hash);
      } catch (err) {
        await gate.refund();
        throw err;
      }
      if (!ok) {
        await gate.failed(user);
        throw new ApiError('auth_error', 'the current password is wrong', {}, 403);
      }
      await gate.succeeded();
      if (user.tfa_status !== 'disabled') await tfa.verifyFactor(user, body, '2fa_verification_failed', ['verify', 'login']);
      await replace(user.id, user.email, body.new_password);
      const ended = await sessions.endAllOf(user.id, p.key.kind === 'session' ? p.key.id : null);
      return { success: true, msg: `password changed; ${ended} other session${ended === 1 ? '' : 's'} ended` };
    },
  };
}

export type Passwords = ReturnType<typeof passwordsFactory>;
