import { sql, type Insertable, type RawBuilder, type Selectable } from 'kysely';
import type { Tx } from '../platform/db/connect.js';
import type { Category } from '../platform/permissions.js';
import type { TeamInvitationsTable, TeamMembersTable, TeamRolesTable, TeamsTable } from './teams-tables.js';

export type TeamRow = Selectable<TeamsTable>;
export type RoleRow = Selectable<TeamRolesTable>;
export type MemberRow = Selectable<TeamMembersTable>;
export type InvitationRow = Selectable<TeamInvitationsTable>;

export interface MemberView {
  user_id: number;
  email: string;
  full_name: string;
  role_id: number;
  role: string;
  created_at: number;
}

export function teamsStore(db: Tx) {
  return {
    async insertTeam(t: Insertable<TeamsTable>, tx: Tx = db): Promise<TeamRow> {
      return tx.insertInto('teams').values(t).returningAll().executeTakeFirstOrThrow();
    },
    async findTeam(id: number, tx: Tx = db): Promise<TeamRow | undefined> {
      return tx.selectFrom('teams').selectAll().where('id', '=', id).executeTakeFirst();
    },
    async teamsOwnedBy(userId: number, tx: Tx = db): Promise<TeamRow[]> {
      return tx.selectFrom('teams').selectAll().where('owner_id', '=', userId).orderBy('id').execute();
    },
    /** Members, roles and invitations go with the team (ON DELETE CASCADE). */
    async deleteTeam(id: number, tx: Tx = db): Promise<void> {
      await tx.deleteFrom('team_invitations').where('team_id', '=', id).execute();
      await tx.deleteFrom('team_members').where('team_id', '=', id).execute();
      await tx.deleteFrom('team_roles').where('team_id', '=', id).execute();
      await tx.deleteFrom('teams').where('id', '=', id).execute();
    },

    /**
     * The member's current role document, for auth on every team-key request: `undefined` when the user is not a
     * member (removed, or the team is gone), otherwise the role's JSON document (null: full access).
     */
    async memberPermissions(teamId: number, userId: number, tx: Tx = db): Promise<{ permissions: string | null; owner_id: number } | undefined> {
      // The team's owner comes with the role: the account a team key acts for (auth `Principal.accountId`).
      return tx
        .selectFrom('team_members as m')
        .innerJoin('team_roles as r', 'r.id', 'm.role_id')
        .innerJoin('teams as t', 't.id', 'm.team_id')
        .select(['r.permissions', 't.owner_id'])
        .where('m.team_id', '=', teamId)
        .where('m.user_id', '=', userId)
        .executeTakeFirst();
    },

    /** The teams a user is a member of (owner included), with their role: the contexts a session may switch into. */
    async membershipsOf(userId: number, tx: Tx = db): Promise<{ team_id: number; team_name: string; role: string }[]> {
      return tx
        .selectFrom('team_members as m')
        .innerJoin('teams as t', 't.id', 'm.team_id')
        .innerJoin('team_roles as r', 'r.id', 'm.role_id')
        .select(['t.id as team_id', 't.name as team_name', 'r.name as role'])
        .where('m.user_id', '=', userId)
        .orderBy('t.id')
        .execute();
    },
    async insertRole(r: Insertable<TeamRolesTable>, tx: Tx = db): Promise<RoleRow> {
      return tx.insertInto('team_roles').values(r).returningAll().executeTakeFirstOrThrow();
    },
    async findRoleByName(teamId: number, name: string, tx: Tx = db): Promise<RoleRow | undefined> {
      return tx.selectFrom('team_roles').selectAll().where('team_id', '=', teamId).where('name', '=', name).executeTakeFirst();
    },
    async findRoleById(teamId: number, id: number, tx: Tx = db): Promise<RoleRow | undefined> {
      return tx.selectFrom('team_roles').selectAll().where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
    },
    async listRoles(teamId: number, tx: Tx = db): Promise<RoleRow[]> {
      return tx.selectFrom('team_roles').selectAll().where('team_id', '=', teamId).orderBy('id').execute();
    },
    async updateRole(id: number, set: { name?: string; permissions?: string | null }, tx: Tx = db): Promise<RoleRow> {
      return tx.updateTable('team_roles').set(set).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
    },
    /** Used or expired invitations still point at the role; they go with it (callers check no pending one does). */
    async deleteRole(id: number, tx: Tx = db): Promise<void> {
      await tx.deleteFrom('team_invitations').where('role_id', '=', id).execute();
      await tx.deleteFrom('team_roles').where('id', '=', id).execute();
    },
    /** Members and pending invitations holding the role (a role in use cannot be removed). */
    async roleUseCount(roleId: number, now: number, tx: Tx = db): Promise<number> {
      const m = await tx.selectFrom('team_members').select('id').where('role_id', '=', roleId).execute();
      const i = await tx
        .selectFrom('team_invitations')
        .select('id')
        .where('role_id', '=', roleId)
        .where('accepted_at', 'is', null)
        .where('expires_at', '>', now)
        .execute();
      return m.length + i.length;
    },

    async insertMember(m: Insertable<TeamMembersTable>, tx: Tx = db): Promise<MemberRow> {
      return tx.insertInto('team_members').values(m).returningAll().executeTakeFirstOrThrow();
    },
    async findMember(teamId: number, userId: number, tx: Tx = db): Promise<MemberRow | undefined> {
      return tx.selectFrom('team_members').selectAll().where('team_id', '=', teamId).where('user_id', '=', userId).executeTakeFirst();
    },
    async listMembers(teamId: number, tx: Tx = db): Promise<MemberView[]> {
      return tx
        .selectFrom('team_members as m')
        .innerJoin('users as u', 'u.id', 'm.user_id')
        .innerJoin('team_roles as r', 'r.id', 'm.role_id')
        .select(['m.user_id', 'u.email', 'u.full_name', 'm.role_id', 'r.name as role', 'm.created_at'])
        .where('m.team_id', '=', teamId)
        .orderBy('m.id')
        .execute();
    },
    async setMemberRole(teamId: number, userId: number, roleId: number, tx: Tx = db): Promise<void> {
      await tx.updateTable('team_members').set({ role_id: roleId }).where('team_id', '=', teamId).where('user_id', '=', userId).execute();
    },
    async deleteMember(teamId: number, userId: number, tx: Tx = db): Promise<void> {
      await tx.deleteFrom('team_members').where('team_id', '=', teamId).where('user_id', '=', userId).execute();
    },

    /** Every member of these teams with their role's permission document (JSON text; null: full access). */
    async membersWithPermissions(teamIds: readonly number[], tx: Tx = db): Promise<{ team_id: number; user_id: number; permissions: string | null }[]> {
      if (teamIds.length === 0) return [];
      return tx
        .selectFrom('team_members as m')
        .innerJoin('team_roles as r', 'r.id', 'm.role_id')
        .select(['m.team_id', 'm.user_id', 'r.permissions'])
        .where('m.team_id', 'in', [...teamIds])
        .orderBy('m.id')
        .execute();
    },

    async insertInvitation(i: Insertable<TeamInvitationsTable>, tx: Tx = db): Promise<InvitationRow> {
      return tx.insertInto('team_invitations').values(i).returningAll().executeTakeFirstOrThrow();
    },
    async findInvitationByHash(hash: string, tx: Tx = db): Promise<InvitationRow | undefined> {
      return tx.selectFrom('team_invitations').selectAll().where('code_hash', '=', hash).executeTakeFirst();
    },
    /** Marks it accepted only if nobody did yet (two concurrent accepts: one wins). */
    async acceptInvitation(id: number, now: number, tx: Tx = db): Promise<boolean> {
      const r = await tx
        .updateTable('team_invitations')
        .set({ accepted_at: now })
        .where('id', '=', id)
        .where('accepted_at', 'is', null)
        .executeTakeFirst();
      return Number(r.numUpdatedRows) === 1;
    },
    async pendingInvitations(teamId: number, now: number, tx: Tx = db): Promise<(InvitationRow & { role: string })[]> {
      return tx
        .selectFrom('team_invitations as i')
        .innerJoin('team_roles as r', 'r.id', 'i.role_id')
        .selectAll('i')
        .select('r.name as role')
        .where('i.team_id', '=', teamId)
        .where('i.accepted_at', 'is', null)
        .where('i.expires_at', '>', now)
        .orderBy('i.id')
        .execute();
    },

  };
}

export type TeamsStore = ReturnType<typeof teamsStore>;

/**
 * A subquery of rows (team_id, user_id): the members whose role allows `category`, for another feature's statement
 * (the agent server's fingerprint of a desired state, which must change when the members with instance access do).
 * It says in SQL what `allows(roleDoc(role), category)` says: a role without a document (null, or the empty text
 * roleDoc reads as none) is full access; any other is the JSON a permission document is stored as (JSON.stringify of
 * parsePermissionDoc's result: categories are its only keys, each `{}`), which names the category, quoted, exactly when
 * it grants it. `_` is LIKE's one-character wildcard, so it is escaped.
 */
export function membersAllowingSql(category: Category): RawBuilder<unknown> {
  const pattern = `%"${category.replace(/[\\%_]/g, (c) => `\\${c}`)}"%`;
  return sql`select m.team_id, m.user_id from team_members m join team_roles r on r.id = m.role_id
    where r.permissions is null or r.permissions = '' or r.permissions like ${pattern} escape '\\'`;
}

