import type { Principal } from '../platform/auth.js';
import { durationText, type Clock } from '../platform/clock.js';
import { sha256Hex } from '../platform/crypto.js';
import type { Db, Tx } from '../platform/db/connect.js';
import { ApiError, badRequest, notFound } from '../platform/errors.js';
import { isSubset, type PermissionDoc } from '../platform/permissions.js';
import { secretToken, type Random } from '../platform/random.js';
import type { UsersLookup } from '../users/users-contract.js';
import { DEFAULT_ROLES, OWNER_ROLE, parseRoleInput, rolesServiceFactory, roleDoc } from './team-roles-service.js';
import type { TeamRow, TeamsStore } from './teams-store.js';

/** An invitation code is good for this long (a real cloud's invitation link expires too). */
export const TEAM_INVITE_TTL_S = 7 * 86400;
export const INVITE_PREFIX = 'gpt_inv_';

/** Something another feature must do before a team goes (e.g. refuse while instances run, or release them). */
export type TeamDeleteHook = (teamId: number, tx: Tx) => Promise<void>;
/**
 * What another feature does when a member leaves, in the same transaction: what the team has that the member still
 * pays for becomes the team owner's (`toUserId`) from `at`.
 */
export type MemberRemovedHook = (tx: Tx, m: { teamId: number; fromUserId: number; toUserId: number; at: number }) => Promise<void>;

export interface TeamsServiceDeps {
  db: Db;
  teams: TeamsStore;
  users: Pick<UsersLookup, 'findByEmail'>;
  clock: Clock;
  random: Random;
  publicUrl: string;
  /** Revokes team keys: one member's (`userId`) or all (`null`). From the keys store. */
  revokeTeamKeys(teamId: number, userId: number | null, now: number, tx: Tx): Promise<void>;
  /** Delivers an e-mail: the outbox in emulator mode. */
  /** Sends an e-mail (the outbox in emulator mode, SMTP in production); called after the invitation commits. */
  sendEmail(m: { to: string; subject: string; code: string; text: string }): Promise<void>;
}

export function teamsServiceFactory(deps: TeamsServiceDeps) {
  const { db, teams, users, clock, random } = deps;
  const deleteHooks: TeamDeleteHook[] = [];
  const memberRemovedHooks: MemberRemovedHook[] = [];

  /**
   * The team a request acts on: the team of a team key (team context); with a personal key, the one team its user
   * owns (the vastai client sends one key for everything). Members act through team keys.
   */
  async function currentTeam(p: Principal): Promise<TeamRow> {
    if (p.teamId !== null) {
      const team = await teams.findTeam(p.teamId);
      if (!team) throw notFound(`team ${p.teamId}`);
      return team;
    }
    const owned = await teams.teamsOwnedBy(p.user.id);
    if (owned.length === 1) return owned[0];
    if (owned.length === 0) {
      throw new ApiError('not_found', 'no team: create one with POST /api/v0/team/, or use an API key made for the team (team context)');
    }
    throw badRequest('you own several teams: use an API key made for the team (POST /api/v0/auth/apikeys/ with team_id)');
  }

  const roles = rolesServiceFactory({ teams, clock, currentTeam });

  /** A member's role may only be given or taken by someone whose own rights cover it. */
  function assertCovers(p: Principal, doc: PermissionDoc | null, what: string): void {
    if (!isSubset(doc, p.permissions)) throw new ApiError('permission_denied', `${what} needs rights your key (or role) does not have`);
  }

  return {
    currentTeam,
    roles,

    onDelete(hook: TeamDeleteHook): void {
      deleteHooks.push(hook);
    },

    onMemberRemoved(hook: MemberRemovedHook): void {
      memberRemovedHooks.push(hook);
    },

    /** The creator becomes the owner; the built-in `owner` role and the default roles are made with the team. */
    async create(p: Principal, teamName: string) {
      if (p.teamId !== null) throw new ApiError('permission_denied', 'a team cannot be created from a team context; use a personal key');
      const name = teamName.trim();
      if (name === '') throw badRequest('body.team_name must not be empty');
      return db.transaction().execute(async (tx) => {
        const now = clock.now();
        const team = await teams.insertTeam({ name, owner_id: p.user.id, created_at: now }, tx);
        const owner = await teams.insertRole({ team_id: team.id, name: OWNER_ROLE, permissions: null, is_owner: 1, created_at: now }, tx);
        for (const [roleName, doc] of Object.entries(DEFAULT_ROLES)) {
          await teams.insertRole({ team_id: team.id, name: roleName, permissions: JSON.stringify(doc), is_owner: 0, created_at: now }, tx);
        }
        await teams.insertMember({ team_id: team.id, user_id: p.user.id, role_id: owner.id, created_at: now }, tx);
        return { success: true as const, msg: `team ${name} created`, id: team.id, team_id: team.id, team_name: name, owner_id: p.user.id, created_at: now };
      });
    },

    /** Only the owner; every team key is revoked in the same transaction. */
    async remove(p: Principal) {
      const team = await currentTeam(p);
      if (team.owner_id !== p.user.id) throw new ApiError('permission_denied', 'only the team owner can delete the team');
      await db.transaction().execute(async (tx) => {
        for (const hook of deleteHooks) await hook(team.id, tx);
        await deps.revokeTeamKeys(team.id, null, clock.now(), tx);
        await teams.deleteTeam(team.id, tx);
      });
      return { success: true as const, msg: `team ${team.name} deleted` };
    },

    async members(p: Principal) {
      const team = await currentTeam(p);
      const now = clock.now();
      const members = await teams.listMembers(team.id);
      const pending = await teams.pendingInvitations(team.id, now);
      return {
        success: true as const,
        team_id: team.id,
        team_name: team.name,
        members: members.map((m) => ({
          id: m.user_id,
          user_id: m.user_id,
          email: m.email,
          full_name: m.full_name,
          role: m.role,
          role_id: m.role_id,
          is_owner: m.user_id === team.owner_id,
          joined_at: m.created_at,
        })),
        invitations: pending.map((i) => ({ id: i.id, email: i.email, role: i.role, created_at: i.created_at, expires_at: i.expires_at })),
      };
    },

    /**
     * Sends an invitation code to the address. The invited account (signed in with that e-mail) accepts it with
     * `POST /api/v0/team/invitations/accept/`; an e-mail without an account can sign up first, until it expires.
     */
    async invite(p: Principal, email: string, roleName: string) {
      const team = await currentTeam(p);
      const role = await teams.findRoleByName(team.id, roleName);
      if (!role) throw notFound(`role ${JSON.stringify(roleName)}`);
      if (role.is_owner) throw badRequest('query.role: the owner role cannot be given; a team has one owner');
      assertCovers(p, roleDoc(role), `inviting with role ${role.name}`);
      const existing = await users.findByEmail(email);
      if (existing && (await teams.findMember(team.id, existing.id))) throw new ApiError('conflict', `${email} is already a member`);
      const code = secretToken(random, INVITE_PREFIX);
      const now = clock.now();
      await db.transaction().execute(async (tx) => {
        await teams.insertInvitation(
          { team_id: team.id, email, role_id: role.id, code_hash: sha256Hex(code), invited_by: p.user.id, created_at: now, expires_at: now + TEAM_INVITE_TTL_S },
          tx,
        );
      });
      const text =
        `You are invited to join the team ${team.name} as ${role.name}. Sign in as ${email} and accept with ` +
        `POST ${deps.publicUrl}/api/v0/team/invitations/accept/ {"code": "${code}"}. The invitation expires in ${durationText(TEAM_INVITE_TTL_S)}.`;
      await deps.sendEmail({ to: email, subject: `Invitation to the team ${team.name}`, code, text });
      return { success: true as const, msg: `invitation sent to ${email}` };
    },

    /** The invited account joins with the invited role; the code works once, for that e-mail only. */
    async accept(p: Principal, code: string) {
      if (p.teamId !== null) throw new ApiError('permission_denied', 'accept an invitation with a personal key, not a team key');
      const now = clock.now();
      const inv = await teams.findInvitationByHash(sha256Hex(code));
      // One answer for unknown, used, expired and someone else's codes: a code reveals nothing about others.
      const invalid = () => notFound('invitation (unknown, used or expired code, or sent to another e-mail)');
      if (!inv || inv.accepted_at !== null || inv.expires_at <= now || inv.email.toLowerCase() !== p.user.email.toLowerCase()) throw invalid();
      return db.transaction().execute(async (tx) => {
        if (!(await teams.acceptInvitation(inv.id, now, tx))) throw invalid();
        if (await teams.findMember(inv.team_id, p.user.id, tx)) throw new ApiError('conflict', 'you are already a member of this team');
        const team = await teams.findTeam(inv.team_id, tx);
        const role = await teams.findRoleById(inv.team_id, inv.role_id, tx);
        if (!team || !role) throw invalid();
        await teams.insertMember({ team_id: team.id, user_id: p.user.id, role_id: role.id, created_at: now }, tx);
        return { success: true as const, msg: `you joined the team ${team.name}`, team_id: team.id, team_name: team.name, role: role.name };
      });
    },

    /**
     * Removing a member revokes their team keys; auth also refuses them, since it checks membership on each request.
     * Nothing of the team stays on their bill (issue 29 item 17): what the team made is paid by its owner, and what
     * it still has on the member's account (made before that rule) moves to the owner's with the removal.
     */
    async removeMember(p: Principal, userId: number) {
      const team = await currentTeam(p);
      const member = await teams.findMember(team.id, userId);
      if (!member) throw notFound(`team member ${userId}`);
      if (userId === team.owner_id) throw new ApiError('permission_denied', 'the team owner cannot be removed');
      const role = await teams.findRoleById(team.id, member.role_id);
      if (role) assertCovers(p, roleDoc(role), `removing a ${role.name}`);
      await db.transaction().execute(async (tx) => {
        const now = clock.now();
        await teams.deleteMember(team.id, userId, tx);
        for (const hook of memberRemovedHooks) await hook(tx, { teamId: team.id, fromUserId: userId, toUserId: team.owner_id, at: now });
        await deps.revokeTeamKeys(team.id, userId, now, tx);
      });
      return { success: true as const, msg: `member ${userId} removed` };
    },

    /** Gives a member another role; it applies to their team keys on their next request. */
    async setMemberRole(p: Principal, userId: number, roleName: string) {
      const team = await currentTeam(p);
      const member = await teams.findMember(team.id, userId);
      if (!member) throw notFound(`team member ${userId}`);
      if (userId === team.owner_id) throw new ApiError('permission_denied', "the team owner's role cannot be changed");
      const role = await teams.findRoleByName(team.id, roleName);
      if (!role) throw notFound(`role ${JSON.stringify(roleName)}`);
      if (role.is_owner) throw badRequest('body.role: the owner role cannot be given; a team has one owner');
      const current = await teams.findRoleById(team.id, member.role_id);
      if (current) assertCovers(p, roleDoc(current), `changing the role of a ${current.name}`);
      assertCovers(p, roleDoc(role), `giving the role ${role.name}`);
      await teams.setMemberRole(team.id, userId, role.id);
      return { success: true as const, msg: `member ${userId} is now ${role.name}` };
    },

    parseRoleInput,
  };
}

export type TeamsService = ReturnType<typeof teamsServiceFactory>;
