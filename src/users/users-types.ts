import { Type, type Static } from 'typebox';

/** The spec's user object, plus the fields the vastai client reads or prints. */
export const UserObject = Type.Object({
  id: Type.Integer(),
  username: Type.String(),
  email: Type.String(),
  full_name: Type.String(),
  fullname: Type.String({ description: 'Alias of full_name, as the vastai client prints it.' }),
  credit: Type.Number({ description: 'Balance in dollars.' }),
  balance: Type.Number({ description: 'Alias of credit.' }),
  ssh_key: Type.Union([Type.String(), Type.Null()]),
  tfa_status: Type.Union([Type.Literal('enabled'), Type.Literal('disabled'), Type.Literal('legacy')]),
  tfa_enabled: Type.Boolean(),
  email_verified_at: Type.Union([Type.Number(), Type.Null()]),
  email_verified: Type.Boolean(),
  is_admin: Type.Boolean(),
  created_at: Type.Number(),
});
export type UserObject = Static<typeof UserObject>;

export const CurrentUserReply = Type.Intersect([
  UserObject,
  Type.Object({ api_key: Type.String({ description: 'The key this request presented (client-compat).' }) }),
]);
export type CurrentUserReply = Static<typeof CurrentUserReply>;
