/** Sign-up, login and two-factor authentication (spec: 2FA endpoints; contract §3 Login). */
import type { Static } from 'typebox';
import type { Bodies, Replies } from '../../tfa/tfa-schemas.js';
import type {
  ChangePasswordBody,
  LoginBody,
  LoginOk,
  LoginReply,
  ResendVerificationBody,
  ResetPasswordBody,
  ResetRequestBody,
  SessionRevokeReply,
  SessionsReply,
  SessionTeamReply,
  SessionTeamSetReply,
  SignUpBody,
  SignUpReply,
  VerifyEmailBody,
} from '../../login/login-schemas.js';
import type { Transport } from '../transport.js';

type B<K extends keyof typeof Bodies> = Static<(typeof Bodies)[K]>;
type R<K extends keyof typeof Replies> = Static<(typeof Replies)[K]>;

export type SignUp = Static<typeof SignUpBody>;
export type LoginRequest = Static<typeof LoginBody>;
export type LoginResult = Static<typeof LoginReply>;
type Ok = Static<typeof LoginOk>;

export function loginApi(t: Transport) {
  return {
    /** `POST /api/v0/users/` (no key): a new account; a verification code is e-mailed to the address. */
    signUp: (body: SignUp) => t.request<Static<typeof SignUpReply>>('POST', '/api/v0/users/', { body }),
    /** `POST /api/v0/users/verify-email/`: verifies the address with the code e-mailed to it. */
    verifyEmail: (body: Static<typeof VerifyEmailBody>) => t.request<Ok>('POST', '/api/v0/users/verify-email/', { body }),
    /** `POST /api/v0/users/verify-email/resend/`: e-mails a new verification code. */
    resendVerification: (body: Static<typeof ResendVerificationBody>) => t.request<Ok>('POST', '/api/v0/users/verify-email/resend/', { body }),
    /** `POST /api/v0/users/reset-password/` (no key): e-mails a reset code, if the address has an account. */
    requestPasswordReset: (body: Static<typeof ResetRequestBody>) => t.request<Ok>('POST', '/api/v0/users/reset-password/', { body }),
    /** `PUT /api/v0/users/reset-password/` (no key): the e-mailed code and a new password; every session ends. */
    resetPassword: (body: Static<typeof ResetPasswordBody>) => t.request<Ok>('PUT', '/api/v0/users/reset-password/', { body }),
    /** `PUT /api/v0/users/current/password/`: the current password (and a second factor with 2FA on) and a new one. */
    changePassword: (body: Static<typeof ChangePasswordBody>) => t.request<Ok>('PUT', '/api/v0/users/current/password/', { body }),
    /** `POST /api/v0/auth/login/`: a session, or `{tfa_required, tfa_secret, methods}` to finish with `tfa.login`. */
    login: (body: LoginRequest) => t.request<LoginResult>('POST', '/api/v0/auth/login/', { body }),
    /** `POST /api/v0/auth/logout/`: ends the session whose key made the call. */
    logout: () => t.request<Ok>('POST', '/api/v0/auth/logout/', { body: {} }),
    /** `GET /api/v0/auth/sessions/`: your live sessions (browser cookies and CLI session keys). */
    sessions: () => t.request<Static<typeof SessionsReply>>('GET', '/api/v0/auth/sessions/'),
    /** `DELETE /api/v0/auth/sessions/{id}/`: ends one of your sessions. */
    revokeSession: (id: number) => t.request<Static<typeof SessionRevokeReply>>('DELETE', `/api/v0/auth/sessions/${id}/`, { body: {} }),
    /** `GET /api/v0/auth/sessions/team/`: the context of this key or session (`team_id`, null: personal) and your teams. */
    sessionTeam: () => t.request<Static<typeof SessionTeamReply>>('GET', '/api/v0/auth/sessions/team/'),
    /** `PUT /api/v0/auth/sessions/team/`: switches the calling login session into a team's context, or back (null). */
    switchTeam: (teamId: number | null) => t.request<Static<typeof SessionTeamSetReply>>('PUT', '/api/v0/auth/sessions/team/', { body: { team_id: teamId } }),
  };
}

export function tfaApi(t: Transport) {
  return {
    status: () => t.request<R<'status'>>('GET', '/api/v0/tfa/status/'),
    /** Completes a login with a second factor; CLI callers get a `session_key`. */
    login: (body: B<'login'>) => t.request<R<'login'>>('POST', '/api/v0/tfa/', { body }),
    sendEmail: (body: B<'email'> = {}) => t.request<R<'sent'>>('POST', '/api/v0/tfa/email/', { body }),
    sendSms: (body: B<'sms'>) => t.request<R<'sent'>>('POST', '/api/v0/tfa/sms/', { body }),
    resendSms: (body: B<'sms'>) => t.request<R<'sent'>>('POST', '/api/v0/tfa/sms/resend/', { body }),
    totpSetup: () => t.request<R<'totpSetup'>>('POST', '/api/v0/tfa/totp-setup/', { body: {} }),
    authorizeStart: (body: B<'authorizeStart'>) => t.request<R<'authorizeStart'>>('POST', '/api/v0/tfa/authorize-new-method/', { body }),
    authorizeFinish: (body: B<'authorizeFinish'>) => t.request<R<'ok'>>('PUT', '/api/v0/tfa/authorize-new-method/', { body }),
    /** Adds an SMS or TOTP method (`tfa activate`); the first one also returns the backup codes. */
    confirmNew: (body: B<'confirmNew'>) => t.request<R<'confirmNew'>>('POST', '/api/v0/tfa/confirm-new/', { body }),
    update: (body: B<'update'>) => t.request<R<'update'>>('PUT', '/api/v0/tfa/update/', { body }),
    remove: (body: B<'remove'>) => t.request<R<'remove'>>('DELETE', '/api/v0/tfa/', { body }),
    regenBackupCodes: (body: B<'regen'>) => t.request<R<'regen'>>('PUT', '/api/v0/tfa/regen-backup-codes/', { body }),
  };
}
