/**
 * TypeBox schemas of the team routes (contract §3), exported so the SDK takes its request and reply types from what
 * the server validates (`import type` + `Static<>`).
 */
import { Type } from 'typebox';
import { Id } from '../platform/schemas.js';

export const TeamOk = Type.Object({ success: Type.Literal(true), msg: Type.String() });

export const RoleObject = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  permissions: Type.Array(Type.String(), { description: 'The permission categories the role grants.' }),
  team_id: Type.Integer(),
});
export const RoleReply = Type.Intersect([TeamOk, RoleObject]);
export const RoleList = Type.Array(RoleObject);
export const RoleName = Type.Object({ name: Type.String({ minLength: 1, maxLength: 64 }) });
/** Longest role name. */
export const ROLE_NAME_MAX = 64;
const Permissions = Type.Unknown({ description: 'A permission document {"api": {"<category>": {}}} or a list of category names.' });
export const UserId = Type.Object({ id: Id() });

export const CreateTeamBody = Type.Object({ team_name: Type.String({ minLength: 1, maxLength: 100 }) });
export const CreateTeamReply = Type.Object({
  success: Type.Literal(true),
  msg: Type.String(),
  id: Type.Integer(),
  team_id: Type.Integer(),
  team_name: Type.String(),
  owner_id: Type.Integer(),
  created_at: Type.Number(),
});

export const MembersReply = Type.Object({
  success: Type.Literal(true),
  team_id: Type.Integer(),
  team_name: Type.String(),
  members: Type.Array(
    Type.Object({
      id: Type.Integer({ description: 'The user id (as remove member takes it).' }),
      user_id: Type.Integer(),
      email: Type.String(),
      full_name: Type.String(),
      role: Type.String(),
      role_id: Type.Integer(),
      is_owner: Type.Boolean(),
      joined_at: Type.Number(),
    }),
  ),
  invitations: Type.Array(
    Type.Object({ id: Type.Integer(), email: Type.String(), role: Type.String(), created_at: Type.Number(), expires_at: Type.Number() }),
  ),
});

export const InviteQuery = Type.Object({
  email: Type.String({ minLength: 3, maxLength: 254, pattern: '^[^\\s@]+@[^\\s@]+$' }),
  role: Type.String({ minLength: 1, maxLength: 64 }),
});

export const AcceptBody = Type.Object({ code: Type.String({ minLength: 1, maxLength: 200 }) });
export const AcceptReply = Type.Object({
  success: Type.Literal(true),
  msg: Type.String(),
  team_id: Type.Integer(),
  team_name: Type.String(),
  role: Type.String(),
});

export const MemberRoleBody = Type.Object({ role: Type.String({ minLength: 1, maxLength: 64 }) });

export const CreateRoleBody = Type.Object({ name: Type.String({ minLength: 1, maxLength: ROLE_NAME_MAX }), permissions: Permissions });
/** Open, as the other team bodies: other keys are ignored; `team_id`, `id` and the like are 400s (platform/validation.ts). */
export const UpdateRoleBody = Type.Object({
  name: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: ROLE_NAME_MAX }), Type.Null()])),
  permissions: Type.Optional(Permissions),
});
