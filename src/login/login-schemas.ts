/**
 * TypeBox schemas of sign-up, e-mail verification, login and logout (contract §3), exported so the SDK takes its
 * request and reply types from what the server validates (`import type` + `Static<>`).
 */
import { Type } from 'typebox';
import { UserObject } from '../users/users-types.js';
import { Factor, Method } from '../tfa/tfa-schemas.js';
import { Id } from '../platform/schemas.js';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from './login-constants.js';

const Email = Type.String({ minLength: 3, maxLength: 254, pattern: '^[^\\s@]+@[^\\s@]+$' });

export const LoginOk = Type.Object({ success: Type.Boolean(), msg: Type.String() });

/**
 * Sign-up; with `parent_id` (and the caller's key), a subaccount of the caller's account, as `vastai create subaccount`
 * sends it: `{email, username, password, host_only, parent_id: "me"}` (docs/spec/client-compat-more.md §b).
 */
export const SignUpBody = Type.Object({
  email: Email,
  password: Type.String({ minLength: PASSWORD_MIN_LENGTH, maxLength: PASSWORD_MAX_LENGTH }),
  full_name: Type.Optional(Type.String({ maxLength: 200 })),
  parent_id: Type.Optional(Type.Union([Type.Literal('me'), Id()], { description: 'Makes a subaccount of the account of the key in use: "me"' })),
  username: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'A subaccount\'s name, shown by show subaccounts' })),
  host_only: Type.Optional(Type.Boolean({ description: 'A subaccount that may host machines but not rent' })),
});
export const SignUpReply = Type.Object({ success: Type.Boolean(), msg: Type.String(), user: UserObject });

const Code = Type.String({ minLength: 1, maxLength: 64, description: 'the code from the e-mail' });
const NewPassword = Type.String({ minLength: PASSWORD_MIN_LENGTH, maxLength: PASSWORD_MAX_LENGTH });

/**
 * `password`: the sign-up's password. Optional, but after a second sign-up of the same unverified address only a code
 * given with the latest sign-up's password keeps that password (login's email-verify.ts says why).
 */
export const VerifyEmailBody = Type.Object({
  email: Email,
  code: Code,
  password: Type.Optional(Type.String({ minLength: 1, maxLength: PASSWORD_MAX_LENGTH, description: 'the password the address was signed up with' })),
});
export const ResendVerificationBody = Type.Object({ email: Email });

/** `POST /api/v0/users/reset-password/`: e-mails a reset code to the address, if it has an account. */
export const ResetRequestBody = Type.Object({ email: Email });
/** `PUT /api/v0/users/reset-password/`: the e-mailed code and the new password. */
export const ResetPasswordBody = Type.Object({ email: Email, code: Code, new_password: NewPassword });
/** `PUT /api/v0/users/current/password/`: the current password, the new one and, with 2FA on, a second factor. */
export const ChangePasswordBody = Type.Object({
  current_password: Type.String({ minLength: 1, maxLength: PASSWORD_MAX_LENGTH }),
  new_password: NewPassword,
  ...Factor,
});

export const LoginBody = Type.Object({
  username: Type.String({ minLength: 1, maxLength: 254 }),
  password: Type.String({ minLength: 1, maxLength: 1024 }),
  client: Type.Optional(Type.Union([Type.Literal('cli'), Type.Literal('ui')])),
});

/** Either the 2FA challenge (finish with `POST /api/v0/tfa/`) or the user with its session. */
export const LoginReply = Type.Union([
  Type.Object({
    success: Type.Boolean(),
    tfa_required: Type.Literal(true),
    tfa_secret: Type.String(),
    methods: Type.Array(Method),
    legacy_tfa_user: Type.Optional(Type.Boolean()),
  }),
  Type.Intersect([UserObject, Type.Object({ success: Type.Boolean(), session_key: Type.Optional(Type.String()) })]),
]);

/** A live login session (`GET /api/v0/auth/sessions/`); its id is its key's. */
export const SessionObject = Type.Object({
  id: Id(),
  client: Type.String({ description: '`ui` (the web console\'s cookie) or `cli` (a session_key)' }),
  created_at: Type.Number(),
  expires_at: Type.Number({ description: 'Unix seconds; the session ends then (7 days after the login)' }),
  last_used_at: Type.Union([Type.Number(), Type.Null()]),
  current: Type.Boolean({ description: 'the session that made this request' }),
  team_id: Type.Union([Type.Integer(), Type.Null()], { description: 'the team the session acts for (team context), or null' }),
});
export const SessionsReply = Type.Object({ success: Type.Boolean(), sessions: Type.Array(SessionObject) });
export const SessionParams = Type.Object({ id: Id() });
export const SessionRevokeReply = Type.Object({ success: Type.Boolean(), msg: Type.String() });

/** The caller's context and the teams a session may switch into (`/api/v0/auth/sessions/team/`). */
const TeamContext = {
  team_id: Type.Union([Type.Integer(), Type.Null()], { description: 'the team this request acted for (team context), or null for the personal context' }),
  teams: Type.Array(Type.Object({ team_id: Type.Integer(), team_name: Type.String(), role: Type.String() }), { description: 'the teams you are a member of' }),
};
export const SessionTeamReply = Type.Object({ success: Type.Boolean(), ...TeamContext });
export const SessionTeamBody = Type.Object(
  { team_id: Type.Union([Type.Integer({ minimum: 1, maximum: 2147483647 }), Type.Null()], { description: 'the team to act for, or null for the personal context' }) },
  { additionalProperties: false },
);
export const SessionTeamSetReply = Type.Object({ success: Type.Boolean(), msg: Type.String(), ...TeamContext });
