import type { Generated } from 'kysely';

/** A team: an account that members act for through team keys (contract §3, Teams and Team context). */
export interface TeamsTable {
  id: Generated<number>;
  name: string;
  /** The creator; always a member with the built-in `owner` role. */
  owner_id: number;
  created_at: number;
}

/** A team's role: a permission document that bounds what its members' team keys may do. */
export interface TeamRolesTable {
  id: Generated<number>;
  team_id: number;
  name: string;
  /** JSON permission document `{"api": {...}}`; null is full access (only the built-in `owner` role). */
  permissions: string | null;
  /** 1 for the built-in `owner` role, which can be neither changed nor removed. */
  is_owner: number;
  created_at: number;
}

export interface TeamMembersTable {
  id: Generated<number>;
  team_id: number;
  user_id: number;
  role_id: number;
  created_at: number;
}

/** A pending invitation: accepted by the invited e-mail's account with the code sent to that address. */
export interface TeamInvitationsTable {
  id: Generated<number>;
  team_id: number;
  email: string;
  role_id: number;
  /** SHA-256 of the invitation code; the code itself exists only in the e-mail. */
  code_hash: string;
  invited_by: number;
  created_at: number;
  expires_at: number;
  accepted_at: number | null;
}

export interface TeamsTables {
  teams: TeamsTable;
  team_roles: TeamRolesTable;
  team_members: TeamMembersTable;
  team_invitations: TeamInvitationsTable;
}
