import { Type, type Static } from 'typebox';
import { ErrorReply, Id } from '../platform/schemas.js';
import { UserObject } from '../users/users-types.js';
import { TFA_LABEL_MAX } from './tfa-constants.js';

/** TypeBox schemas of the 2FA routes (spec: 2FA endpoints). Optional fields are checked by the service, which
 * answers with the spec's codes (`missing_params`, `missing_auth_value` …); types and enums fail as `bad_request`. */
const Kind = Type.Union([Type.Literal('sms'), Type.Literal('totp'), Type.Literal('email')], { description: 'sms, totp or email' });
const Code = Type.String({ maxLength: 64, description: '6-digit code' });
const Secret = Type.String({ maxLength: 512, description: 'tfa_secret of a login or send-code reply, or (confirm-new, TOTP) the base32 secret' });
const MethodId = Id();
const Backup = Type.String({ maxLength: 64, description: 'a backup code XXXX-XXXX-XXXX' });
const Phone = Type.String({ pattern: '^\\+[1-9]\\d{6,14}$', description: 'E.164' });
const Label = Type.String({ minLength: 1, maxLength: TFA_LABEL_MAX });

export const Method = Type.Object({
  id: Type.Integer(),
  user_id: Type.Integer(),
  method: Type.Union([Type.Literal('sms'), Type.Literal('totp')]),
  label: Type.String(),
  phone_number: Type.Union([Type.String(), Type.Null()], { description: 'masked: only the last 4 digits' }),
  is_primary: Type.Boolean(),
  created_at: Type.Number(),
  last_used: Type.Union([Type.Number(), Type.Null()]),
  fail_count: Type.Integer(),
  locked_until: Type.Union([Type.Number(), Type.Null()]),
});

export const Factor = {
  tfa_method: Type.Optional(Kind),
  code: Type.Optional(Code),
  secret: Type.Optional(Secret),
  tfa_method_id: Type.Optional(MethodId),
  backup_code: Type.Optional(Backup),
};

/**
 * Open bodies: the clients drop empty fields and send nothing else; other keys are ignored, and owner and system
 * columns (`user_id`, `fail_count`, `locked_until` …) are 400s (platform/validation.ts).
 */
export const Bodies = {
  login: Type.Object({ ...Factor, admin: Type.Optional(Type.Boolean()) }),
  remove: Type.Object({ ...Factor, target_id: Type.Optional(MethodId) }),
  regen: Type.Object(Factor),
  email: Type.Object({ secret: Type.Optional(Secret) }),
  sms: Type.Object({ phone_number: Type.Optional(Phone), tfa_method_id: Type.Optional(MethodId), secret: Type.Optional(Secret) }),
  authorizeStart: Type.Object({ tfa_method: Type.Optional(Kind), tfa_method_id: Type.Optional(MethodId), backup_code: Type.Optional(Backup) }),
  authorizeFinish: Type.Object({ code: Type.Optional(Code), secret: Type.Optional(Secret) }),
  confirmNew: Type.Object({
    tfa_method: Type.Optional(Kind),
    code: Type.Optional(Code),
    secret: Type.Optional(Secret),
    phone_number: Type.Optional(Phone),
    label: Type.Optional(Label),
  }),
  update: Type.Object({
    tfa_method_id: Type.Optional(MethodId),
    tfa_method: Type.Optional(Kind),
    label: Type.Optional(Label),
    is_primary: Type.Optional(Type.Boolean()),
  }),
};

/** Each body as its route's schema admits it: what the service takes. */
export type TfaBodies = { [K in keyof typeof Bodies]: Static<(typeof Bodies)[K]> };

const ok = { success: Type.Boolean(), msg: Type.String() };
export const Replies = {
  status: Type.Object({
    success: Type.Boolean(),
    tfa_enabled: Type.Boolean(),
    methods: Type.Array(Method),
    backup_codes_remaining: Type.Integer(),
    new_method_authorized: Type.Boolean(),
  }),
  login: Type.Intersect([
    UserObject,
    Type.Object({
      success: Type.Boolean(),
      session_key: Type.Optional(Type.String({ description: 'CLI callers only' })),
      backup_codes_remaining: Type.Optional(Type.Integer()),
      legacy_tfa_user: Type.Optional(Type.Boolean()),
    }),
  ]),
  sent: Type.Object({ ...ok, secret: Type.String() }),
  totpSetup: Type.Object({ success: Type.Boolean(), secret: Type.String(), provisioning_uri: Type.String() }),
  authorizeStart: Type.Object({ success: Type.Boolean(), msg: Type.Optional(Type.String()), secret: Type.Optional(Type.String()) }),
  ok: Type.Object(ok),
  confirmNew: Type.Object({ ...ok, backup_codes: Type.Optional(Type.Array(Type.String())) }),
  update: Type.Object({ ...ok, method: Method }),
  remove: Type.Object({ msg: Type.String(), remaining_methods: Type.Optional(Type.Integer()) }),
  regen: Type.Object({ success: Type.Boolean(), msg: Type.String(), backup_codes: Type.Array(Type.String()) }),
};

/** Every 2FA route can answer with these. */
export const Errors = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply, 404: ErrorReply, 429: ErrorReply, 500: ErrorReply, 503: ErrorReply };
