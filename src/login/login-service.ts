import type { Clock } from '../platform/clock.js';
import { hashPassword, verifyPassword } from '../platform/crypto.js';
import { ApiError } from '../platform/errors.js';
import type { Random } from '../platform/random.js';
import type { Principal } from '../platform/auth.js';
import type { Messenger } from '../messages/messages-service.js';
import type { UsersService } from '../users/users-service.js';
import { toUserObject } from '../users/users-service.js';
import type { UsersLookup } from '../users/users-contract.js';
import type { TfaCaller, TfaForLogin } from '../tfa/tfa-contract.js';
import type { TfaBodies } from '../tfa/tfa-schemas.js';
import type { LoginStore } from './login-store.js';
import type { Static } from 'typebox';
import type { LoginBody } from './login-schemas.js';
import type { Client, Sessions } from './sessions.js';
import { emailCodesFactory } from './email-codes.js';
import { emailVerifyFactory } from './email-verify.js';
import { passwordsFactory } from './passwords.js';
import type { Db } from '../platform/db/connect.js';
import type { DialectName } from '../platform/db/migrations.js';
import { failuresAlertText, loginThrottleFactory } from './login-throttle.js';

export { EMAIL_VERIFY_TTL_S } from './login-constants.js';

export interface LoginDeps {
  db: Db;
  dialect: DialectName;
  users: UsersLookup;
  usersService: UsersService;
  store: LoginStore;
  /** 2FA's part of a login, and the e-mailed codes kept as its challenges (tfa-contract.ts). */
  tfa: TfaForLogin;
  sessions: Sessions;
  messenger: Messenger;
  clock: Clock;
  random: Random;
  /** Whether an account is a subaccount (subaccounts feature): a sign-up never takes one over. */
  isSubaccount(userId: number): Promise<boolean>;
  /** Where the web console is, for the instructions in e-mails. */
  publicUrl: string;
}

export function loginServiceFactory(deps: LoginDeps) {
  const { users, store, tfa, sessions, messenger, clock, random } = deps;
  // Unknown users still cost one scrypt, so timing does not tell which e-mails have accounts.
  const dummyHash = hashPassword('not a password', random);
  const badLogin = () => new ApiError('auth_error', 'wrong username or password');
  const throttle = loginThrottleFactory({
    store: store.throttle,
    clock,
    // The alert is a courtesy: a mail server that fails must not turn a wrong password into a 500.
    alert: (to, failures) => messenger.sendEmail({ to, subject: 'Failed logins to your gpuplane account', text: failuresAlertText(failures), code: null }).catch(() => undefined),
  });

  const codes = emailCodesFactory({ db: deps.db, dialect: deps.dialect, tfa, clock, random });
  const emailVerify = emailVerifyFactory({ ...deps, codes });
  const passwords = passwordsFactory({ ...deps, codes, throttle });

  return {
    /** E-mails a code that verifies the address (sign-up; subaccounts made by another account). */
    sendVerification: emailVerify.sendVerification,
    signUp: emailVerify.signUp,
    verifyEmail: emailVerify.verifyEmail,
    resendVerification: emailVerify.resendVerification,
    requestPasswordReset: passwords.requestReset,
    resetPassword: passwords.reset,
    changePassword: passwords.change,

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
        const { secret, methods } = await tfa.startLogin(user.id, client, now);
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
      const verified = await tfa.verifyFactor(user, body, '2fa_login_failed', ['login', 'verify']);
      // A login secret completes one login, whichever factor was used.
      if (c.loginChallenge && verified.challenge?.id !== c.loginChallenge.id && !(await tfa.consumeChallenge(c.loginChallenge.id, clock.now()))) {
        throw new ApiError('auth_error', 'this tfa_secret was already used; log in again', {}, 403);
      }
      const client: Client = c.principal ? 'cli' : ((c.loginChallenge?.client as Client | null) ?? 'ui');
      const s = await sessions.create(user.id, client, { admin: body.admin });
      const remaining = verified.via === 'backup' ? await tfa.countBackupCodes(user.id) : 0;
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
