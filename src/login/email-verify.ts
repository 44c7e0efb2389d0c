import { durationText, type Clock } from '../platform/clock.js';
import type { Db } from '../platform/db/connect.js';
import type { DialectName } from '../platform/db/migrations.js';
import { hashPassword, safeEqual, verifyPassword } from '../platform/crypto.js';
import { ApiError } from '../platform/errors.js';
import type { Random } from '../platform/random.js';
import type { Messenger } from '../messages/messages-service.js';
import { usersContract, type UserRow, type UsersLookup } from '../users/users-contract.js';
import { toUserObject, type UsersService } from '../users/users-service.js';
import type { Static } from 'typebox';
import type { CodeLimits, EmailCodes } from './email-codes.js';
import {
  EMAIL_VERIFY_CODES_PER_DAY, EMAIL_VERIFY_GUESSES_PER_DAY, EMAIL_VERIFY_RESEND_S, EMAIL_VERIFY_TTL_S,
} from './login-constants.js';
import type { ResendVerificationBody, SignUpBody, VerifyEmailBody } from './login-schemas.js';

/** Marks a verification code made by a sign-up that took over an earlier unverified one (tfa_challenges.client). */
export const TAKEOVER = 'takeover';

const LIMITS: CodeLimits = { ttlS: EMAIL_VERIFY_TTL_S, perDay: EMAIL_VERIFY_CODES_PER_DAY, guessesPerDay: EMAIL_VERIFY_GUESSES_PER_DAY };
/** A resend also waits a minute after the last code; a sign-up (perhaps someone else's takeover) does not. */
const RESEND_LIMITS: CodeLimits = { ...LIMITS, minGapS: EMAIL_VERIFY_RESEND_S };

export interface EmailVerifyDeps {
  db: Db;
  dialect: DialectName;
  users: UsersLookup;
  usersService: UsersService;
  codes: EmailCodes;
  messenger: Messenger;
  clock: Clock;
  random: Random;
  /** Whether the account is a subaccount (made by another account, which holds it): never taken over. */
  isSubaccount(userId: number): Promise<boolean>;
  /** The web console's address, for the e-mail's instructions. */
  publicUrl: string;
}

/**
 * Sign-up and the e-mailed code that verifies its address (contract §3), with the rule for an address someone else
 * signed up first (issue 29 item 22).
 *
 * An unverified account's address belongs to nobody yet: anyone may type any address at sign-up, and a 409 for it
 * locked the address's owner out. So a sign-up of an address whose account is still unverified takes that account
 * over: its password and name replace the earlier sign-up's (a squatter's password never survives the owner's
 * sign-up), every code sent before is burnt, and a new one goes to the address. Whoever reads the mail verifies.
 *
 * One hole remains: a squatter may sign up again after the owner, putting their own password back before the owner
 * enters the newest code. So a code that follows a takeover verifies with the password only: given with the password
 * of the latest sign-up (the console always sends it), the account keeps that password; given without one, the
 * address is verified but no password is kept, and the person who read the mail sets one with a reset code (which
 * also goes only to the address). Subaccounts are not taken over: the parent account made and holds them.
 */
export function emailVerifyFactory(deps: EmailVerifyDeps) {
  const { db, dialect, users, usersService, codes, messenger, clock, random } = deps;
  const invalid = () => new ApiError('bad_request', 'invalid or expired verification code');

  const mailText = (email: string, code: string) => [
    `Your gpuplane verification code is ${code}. It is valid for ${durationText(EMAIL_VERIFY_TTL_S)}.`,
    '',
    `To finish signing up, log in at ${deps.publicUrl}/login with this address and your password: the page asks for this code.`,
    `From a terminal: gpuplane verify email --email ${email} --code ${code}`,
    '',
    'If you did not sign up for gpuplane, ignore this message: the account stays unverified, and nobody can log in to it.',
  ].join('\n');

  /** E-mails a new code under the limits; false when a limit held it back. */
  async function sendVerification(userId: number, email: string, opts: Parameters<EmailCodes['issue']>[3] = {}, limits = LIMITS): Promise<boolean> {
    const code = await codes.issue(userId, 'email_verify', limits, opts);
    if (code === null) return false;
    await messenger.sendEmail({ to: email, subject: 'Verify your gpuplane e-mail address', text: mailText(email, code), code });
    return true;
  }

  async function takeOver(user: UserRow, body: Pick<Static<typeof SignUpBody>, 'password' | 'full_name'>) {
    const hash = await hashPassword(body.password, random);
    let taken = false;
    const sent = await sendVerification(user.id, user.email, {
      burn: true,
      client: TAKEOVER,
      during: async (tx) => {
        taken = await usersContract.takeOverUnverified(tx, user.id, { password_hash: hash, full_name: body.full_name ?? '' });
        if (!taken) throw new ApiError('conflict', `a user with e-mail ${user.email} already exists`);
      },
    });
    if (!sent) throw new ApiError('rate_limited', `too many verification codes were sent to ${user.email} today; try again tomorrow`);
    const fresh = (await users.findById(user.id)) ?? user;
    return { success: true, msg: `a verification code was sent to ${user.email}`, user: toUserObject(fresh) };
  }

  return {
    sendVerification: (userId: number, email: string) => sendVerification(userId, email).then(() => undefined),

    async signUp(body: Pick<Static<typeof SignUpBody>, 'email' | 'password' | 'full_name'>) {
      const existing = await users.findByEmail(body.email);
      if (existing && existing.email_verified_at === null && !(await deps.isSubaccount(existing.id))) return takeOver(existing, body);
      const user = await usersService.createUser({ email: body.email, password: body.password, full_name: body.full_name, email_verified: false, credit: 0 });
      await sendVerification(user.id, user.email);
      return { success: true, msg: `a verification code was sent to ${user.email}`, user: toUserObject(user) };
    },

    async verifyEmail(body: Static<typeof VerifyEmailBody>) {
      const user = await users.findByEmail(body.email);
      if (!user) throw invalid();
      if (user.email_verified_at !== null) return { success: true, msg: 'e-mail address already verified' };
      const ch = await codes.check(user.id, 'email_verify', body.code, LIMITS, invalid);
      if (body.password !== undefined && !(user.password_hash && (await verifyPassword(body.password, user.password_hash)))) {
        throw new ApiError('bad_request', 'that is not the password of the latest sign-up of this address: sign up again, then enter the new code');
      }
      const keepPassword = body.password !== undefined || ch.client !== TAKEOVER;
      await db.transaction().execute(async (tx) => {
        // Under the user's lock, as a takeover is: the password checked above is still the account's.
        await usersContract.lock(tx, user.id, dialect);
        const now = await usersContract.byId(tx, user.id);
        if (!now || !(await codes.consume(ch, tx)) || !safeEqual(now.password_hash ?? '', user.password_hash ?? '')) throw invalid();
        await usersContract.setEmailVerified(tx, user.id, clock.now());
        if (!keepPassword) await usersContract.setPasswordHash(tx, user.id, null);
      });
      return keepPassword
        ? { success: true, msg: 'e-mail address verified; you can log in now' }
        : { success: true, msg: 'e-mail address verified; this address was signed up more than once, so no password was kept: set one with a reset code (POST /api/v0/users/reset-password/)' };
    },

    /** Always the same reply, so it does not tell which addresses have unverified accounts. */
    async resendVerification(body: Static<typeof ResendVerificationBody>) {
      const user = await users.findByEmail(body.email);
      if (user && user.email_verified_at === null) await sendVerification(user.id, user.email, {}, RESEND_LIMITS);
      return { success: true, msg: 'if that address has an unverified account, a new code is on its way' };
    },
  };
}

export type EmailVerify = ReturnType<typeof emailVerifyFactory>;
