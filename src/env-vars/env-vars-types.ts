import { Type, type Static } from 'typebox';

/** Longest variable name, and longest value (characters). */
export const ENV_VAR_NAME_MAX = 128;
export const ENV_VAR_VALUE_MAX = 16_384;
/** Most variables one owner (a user, or a team) may hold. */
export const ENV_VARS_MAX = 256;
/** A POSIX shell variable name: what a container's environment can carry and a script can read. */
export const ENV_VAR_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]*$';

const Name = Type.String({ minLength: 1, maxLength: ENV_VAR_NAME_MAX, pattern: ENV_VAR_NAME_PATTERN, description: 'The variable name.' });

/** `POST` and `PUT /api/v0/secrets/` (`vastai create env-var` / `update env-var`): `{"key": NAME, "value": VALUE}`. */
export const EnvVarBody = Type.Object({ key: Name, value: Type.String({ maxLength: ENV_VAR_VALUE_MAX }) }, { additionalProperties: true });
export type EnvVarBody = Static<typeof EnvVarBody>;

/** `DELETE /api/v0/secrets/` (`vastai delete env-var`): `{"key": NAME}`. */
export const EnvVarDeleteBody = Type.Object({ key: Name }, { additionalProperties: true });
export type EnvVarDeleteBody = Static<typeof EnvVarDeleteBody>;

/** Values in clear: the clients mask them themselves unless asked to show them. */
export const EnvVarsReply = Type.Object({ success: Type.Boolean(), secrets: Type.Record(Type.String(), Type.String()) });
export type EnvVarsReply = Static<typeof EnvVarsReply>;

export const EnvVarOkReply = Type.Object({ success: Type.Boolean(), msg: Type.String() });
export type EnvVarOkReply = Static<typeof EnvVarOkReply>;
