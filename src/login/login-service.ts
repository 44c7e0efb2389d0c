import { durationText, type Clock } from '../platform/clock.js';
import { hashPassword, safeEqual, sha256Hex, verifyPassword } from '../platform/crypto.js';
import { ApiError } from '../platform/errors.js';
import { digitCode, secretToken, type Random } from '../platform/random.js';
import type { Principal } from '../platform/auth.js';
import type { Messenger } from '../messages/messages-service.js';
import type { UsersService } from '../users/users-service.js';
import { toUserObject } from '../users/users-service.js';
import type { UsersStore } from '../users/users-store.js';
import type { TfaCaller } from '../tfa/tfa-auth.js';
import { CODE_DIGITS, TFA_LOGIN_SECRET_TTL_S } from '../tfa/tfa-constants.js';
import { TFA_SECRET_PREFIX } from '../tfa/tfa-send.js';
import type { TfaStore } from '../tfa/tfa-store.js';
import type { TfaVerifier } from '../tfa/tfa-verify.js';
import type { TfaBodies } from '../tfa/tfa-schemas.js';
import { methodObject } from '../tfa/tfa-view.js';
import type { LoginStore } from './login-store.js';
import type { Static } from 'typebox';
import type { LoginBody, ResendVerificationBody, SignUpBody, VerifyEmailBody } from './login-schemas.js';
import type { Client, Sessions } from './sessions.js';
import { EMAIL_VERIFY_RESEND_S, EMAIL_VERIFY_TTL_S } from './login-constants.js';
import { failuresAlertText, loginThrottleFactory } from './login-throttle.js';

export { EMAIL_VERIFY_TTL_S } from './login-constants.js';

export interface LoginDeps {
  users: UsersStore;
  usersService: UsersService;
  store: LoginStore;
  tfaStore: TfaStore;
  verifier: TfaVerifier;
  sessions: Sessions;
  messenger: Messenger;
  clock: Clock;
  random: Random;
}

export function loginServiceFactory(deps: LoginDeps) {
  const { users, usersService, store, tfaStore, verifier, sessions, messenger, clock, random } = deps;
  // Unknown users still cost one scrypt, so timing does not tell which e-mails have accounts.
  const dummyHash = hashPassword('not a password', random);
  const badLogin = () => new ApiError('auth_error', 'wrong username or password');
  const throttle = loginThrottleFactory({
    store: store.throttle,
    clock,
    // The alert is a courtesy: a mail server that fails must not turn a wrong password into a 500.
    alert: (to, failures) => messenger.sendEmail({ to, subject: 'Failed logins to your gpuplane account', text: failuresAlertText(failures), code: null }).catch(() => undefined),
  });

  async function sendVerification(userId: number, email: string): Promise<void> {
    const code = digitCode(random, CODE_DIGITS);
    const now = clock.now();
    await tfaStore.insertChallenge({
      user_id: userId, secret_hash: sha256Hex(secretToken(random, TFA_SECRET_PREFIX)), purpose: 'email_verify', channel: 'email',
      code_hash: sha256Hex(code), last_sent_at: now, code_expires_at: now + EMAIL_VERIFY_TTL_S, expires_at: now + EMAIL_VERIFY_TTL_S, created_at: now,
    });
    await messenger.sendEmail({
      to: email,
      subject: 'Verify your gpuplane e-mail address',
      text: `Your gpuplane e-mail verification code is ${code}. Submit it to POST /api/v0/users/verify-email/ within ${durationText(EMAIL_VERIFY_TTL_S)}.`,
      code,
    });
  }

  return {
    /** E-mails a code that verifies the address (sign-up; subaccounts made by another account). */
    sendVerification,

    async signUp(body: Pick<Static<typeof SignUpBody>, 'email' | 'password' | 'full_name'>) {
      const user = await usersService.createUser({ email: body.email, password: body.password, full_name: body.full_name, email_verified: false, credit: 0 });
      await sendVerification(user.id, user.email);
      return { success: true, msg: `a verification code was sent to ${user.email}`, user: toUserObject(user) };
    },

    async verifyEmail(body: Static<typeof VerifyEmailBody>) {
      const invalid = () => new ApiError('bad_request', 'invalid or expired verification code');
      const user = await users.findByEmail(body.email);
      if (!user) throw invalid();
      if (user.email_verified_at !== null) return { success: true, msg: 'e-mail address already verified' };
      const ch = await store.latestEmailVerify(user.id);
      if (!ch || ch.code_hash === null || (ch.code_expires_at ?? 0) <= clock.now()) throw invalid();
      if ((await tfaStore.claimChallengeAttempt(ch.id)) === undefined) throw invalid();
      if (!safeEqual(sha256Hex(body.code), ch.code_hash) || !(await tfaStore.consumeChallenge(ch.id, clock.now()))) throw invalid();
      await store.setEmailVerified(user.id, clock.now());
      return { success: true, msg: 'e-mail address verified; you can log in now' };
    },

    /** Always the same reply, so it does not tell which addresses have unverified accounts. */
    async resendVerification(body: Static<typeof ResendVerificationBody>) {
      const user = await users.findByEmail(body.email);
      if (user && user.email_verified_at === null) {
        const last = await store.latestEmailVerify(user.id);
        if (!last || clock.now() - (last.last_sent_at ?? 0) >= EMAIL_VERIFY_RESEND_S) await sendVerification(user.id, user.email);
      }
      return { success: true, msg: 'if that address has an unverified account, a new code is on its way' };
    },

    /** `source`: the caller's address (request.ip), one of the throttle's scopes (login-throttle.ts). */
    async login(body: Static<typeof LoginBody>, source: string) {
      const client: Client = body.client ?? 'cli';
      const now = clock.now();
      const user = await users.findByEmail(body.username);
      // Reserve, then check: the slot is taken before the hash, so parallel guesses cannot outrun the count.
      const gate = await throttle.reserve(body.username, source);
      let ok: boolean;
      try {
        ok = user?.password_hash ? await verifyPassword(body.password, user.password_hash) : (await verifyPassword(body.password, await dummyHash), false);
      } catch (err) {
        await gate.refund();
        throw err;
      }
      if (!user || !ok) {
        await gate.failed(user);
        throw badLogin();
      }
      await gate.succeeded();
      if (user.email_verified_at === null) throw new ApiError('email_not_verified', 'verify your e-mail address first (POST /api/v0/users/verify-email/)');
      if (user.tfa_status !== 'disabled') {
        const secret = secretToken(random, TFA_SECRET_PREFIX);
        await tfaStore.insertChallenge({ user_id: user.id, secret_hash: sha256Hex(secret), purpose: 'login', client, created_at: now, expires_at: now + TFA_LOGIN_SECRET_TTL_S });
        const methods = (await tfaStore.listMethods(user.id)).map((m) => methodObject(m, now));
        return { body: { success: true, tfa_required: true as const, tfa_secret: secret, methods, ...(user.tfa_status === 'legacy' ? { legacy_tfa_user: true } : {}) }, cookie: null };
      }
      const s = await sessions.create(user.id, client);
      return { body: { success: true, ...toUserObject(user), ...(client === 'cli' ? { session_key: s.secret } : {}) }, cookie: s.cookie };
    },

    /** POST /api/v0/tfa/: the second factor completes a login and opens a session. */
    async completeTfaLogin(c: TfaCaller, body: TfaBodies['login']) {
      const user = c.user;
      if (body.admin && user.is_admin !== 1) throw new ApiError('permission_denied', 'an admin session needs an admin account');
      if (user.tfa_status === 'disabled') throw new ApiError('2fa_login_failed', '2FA is not enabled on this account');
      const verified = await verifier.verifyFactor(user, body, '2fa_login_failed', ['login', 'verify']);
      // A login secret completes one login, whichever factor was used.
      if (c.loginChallenge && verified.challenge?.id !== c.loginChallenge.id && !(await tfaStore.consumeChallenge(c.loginChallenge.id, clock.now()))) {
        throw new ApiError('auth_error', 'this tfa_secret was already used; log in again', {}, 403);
      }
      const client: Client = c.principal ? 'cli' : ((c.loginChallenge?.client as Client | null) ?? 'ui');
      const s = await sessions.create(user.id, client, { admin: body.admin });
      const remaining = verified.via === 'backup' ? await tfaStore.countBackupCodes(user.id) : 0;
      const fresh = (await users.findById(user.id)) ?? user;
      return {
        body: {
          success: true,
          ...toUserObject(fresh),
          ...(client === 'cli' ? { session_key: s.secret } : {}),
          ...(remaining > 0 ? { backup_codes_remaining: remaining } : {}),
          ...(user.tfa_status === 'legacy' ? { legacy_tfa_user: true } : {}),
        },
        cookie: s.cookie,
      };
    },

    logout: (principal: Principal) => sessions.logout(principal),
  };
}

export type LoginService = ReturnType<typeof loginServiceFactory>;
