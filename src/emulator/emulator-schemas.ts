/**
 * TypeBox schemas of the emulator control API (contract §2), exported so the SDK takes its request and reply types
 * from what the server validates (`import type` + `Static<>`).
 */
import { Type } from 'typebox';
import { Id } from '../platform/schemas.js';
import { UserObject } from '../users/users-types.js';

/** Longest single clock advance: ten years, in seconds. */
const MAX_ADVANCE_S = 10 * 365 * 86400;

export const NowReply = Type.Object({ now: Type.Number({ description: 'Unix seconds' }) });

export const AdvanceBody = Type.Object({ seconds: Type.Number({ exclusiveMinimum: 0, maximum: MAX_ADVANCE_S }) });

export const EmuUserBody = Type.Object({
  email: Type.String({ minLength: 3, maxLength: 254, pattern: '^[^\\s@]+@[^\\s@]+$' }),
  password: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
  full_name: Type.Optional(Type.String({ maxLength: 200 })),
  email_verified: Type.Optional(Type.Boolean({ default: true })),
  is_admin: Type.Optional(Type.Boolean({ default: false })),
  credit: Type.Optional(Type.Number({ minimum: 0, maximum: 1e9, default: 100 })),
  phone_number: Type.Optional(Type.String({ pattern: '^\\+[1-9]\\d{6,14}$' })),
  legacy_tfa: Type.Optional(Type.Boolean({ default: false })),
});

export const EmuUserReply = Type.Object({ user: UserObject, api_key: Type.String() });

export const OutboxQuery = Type.Object({
  to: Type.Optional(Type.String()),
  channel: Type.Optional(Type.Union([Type.Literal('email'), Type.Literal('sms')])),
});

export const OutboxReply = Type.Object({
  messages: Type.Array(
    Type.Object({
      id: Type.Integer(),
      channel: Type.String(),
      to: Type.String(),
      code: Type.Union([Type.String(), Type.Null()]),
      text: Type.String(),
      sent_at: Type.Number(),
    }),
  ),
});

export const FaultBody = Type.Object({
  fault: Type.String({ minLength: 1, maxLength: 64 }),
  instance_id: Type.Optional(Id()),
  machine_id: Type.Optional(Id()),
  count: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
});

export const FaultReply = Type.Object({ success: Type.Boolean() }, { additionalProperties: true });

export const ResetReply = Type.Object({ success: Type.Boolean() });
