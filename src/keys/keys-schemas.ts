/**
 * TypeBox schemas of the API key routes (contract §3), exported so the SDK takes its request and reply types from what
 * the server validates (`import type` + `Static<>`).
 */
import { Type } from 'typebox';
import { Id } from '../platform/schemas.js';

const PermissionDocSchema = Type.Object(
  { api: Type.Record(Type.String(), Type.Object({})) },
  { description: 'Permission document: the categories the key may use (spec: Authentication).' },
);

export const ApiKeyObject = Type.Object({
  id: Type.Integer(),
  name: Type.Union([Type.String(), Type.Null()]),
  permissions: PermissionDocSchema,
  team_id: Type.Union([Type.Integer(), Type.Null()], { description: 'Set for a key that acts for a team (team context).' }),
  created_at: Type.Number({ description: 'Unix seconds' }),
  last_used_at: Type.Union([Type.Number(), Type.Null()], { description: 'Unix seconds; recorded at most once a minute.' }),
});

export const KeyId = Type.Object({ id: Id() });

/**
 * Open: the vastai client sends `name`, `permissions`, `key_params`; other keys are ignored, and owner and system
 * columns (`user_id`, `key_hash` …) are 400s (platform/validation.ts). `team_id` is declared: a team the caller is in.
 */
export const CreateApiKeyBody = Type.Object({
  name: Type.Optional(Type.Union([Type.String({ maxLength: 100 }), Type.Null()])),
  permissions: Type.Optional(Type.Unknown({ description: '{"api": {"<category>": {}, ...}}' })),
  key_params: Type.Optional(Type.Union([Type.String({ maxLength: 10000 }), Type.Null()], { description: 'Accepted for client compatibility; unused.' })),
  team_id: Type.Optional(Type.Union([Id(), Type.Null()])),
});
export const CreateApiKeyReply = Type.Intersect([
  Type.Object({ success: Type.Literal(true), key: Type.String({ description: 'The secret; never shown again.' }) }),
  ApiKeyObject,
]);
export const ApiKeysReply = Type.Object({ success: Type.Literal(true), apikeys: Type.Array(ApiKeyObject) });
/** `vastai reset api-key`: `{"client_id": "me"}`. */
export const ResetApiKeyBody = Type.Object(
  { client_id: Type.Optional(Type.Union([Type.Literal('me'), Type.Integer({ minimum: 1 })])) },
  { additionalProperties: true },
);
/** The client prints `New api-key: <new_api_key>`. */
export const ResetApiKeyReply = Type.Object({ success: Type.Literal(true), new_api_key: Type.String(), id: Type.Integer(), msg: Type.String() });
export const DeleteApiKeyReply = Type.Object({ success: Type.Literal(true), msg: Type.String() });
