import { Type } from 'typebox';

/** The spec's error object. Extra fields (e.g. `fail_count`) may follow. */
export const ErrorReply = Type.Object(
  { success: Type.Literal(false), error: Type.String(), msg: Type.String() },
  { additionalProperties: true },
);

export const SuccessReply = Type.Object({ success: Type.Boolean(), msg: Type.Optional(Type.String()) });

/** The largest id a row can have: ids are PostgreSQL `serial` (int4) columns, the same range on SQLite. */
export const MAX_ID = 2_147_483_647;

/** A row id in a path or body: a larger number names nothing and must be a 400, not a database range error. */
export const Id = (options: { description?: string } = {}) => Type.Integer({ minimum: 1, maximum: MAX_ID, ...options });
