import type { TypedApp } from '../platform/http.js';
import { principalOf } from '../platform/auth.js';
import { ErrorReply } from '../platform/schemas.js';
import type { TeamsService } from './teams-service.js';
import {
  AcceptBody,
  AcceptReply,
  CreateRoleBody,
  CreateTeamBody,
  CreateTeamReply,
  InviteQuery,
  MemberRoleBody,
  MembersReply,
  RoleList,
  RoleName,
  RoleObject,
  RoleReply,
  TeamOk,
  UpdateRoleBody,
  UserId,
} from './teams-types.js';

const tags = ['teams'];
const errors = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply, 404: ErrorReply, 409: ErrorReply };
const Ok = TeamOk;

/**
 * What the teams service checks beyond a route's category (teams-service.ts, team-roles-service.ts): a key holding
 * team_write is not enough for these, and the OpenAPI document says so (`x-permission-requires`; issue 29 item 22).
 * Exported for the test that holds the document to them.
 */
export const REQUIRES = {
  personalKey: 'a personal key (a team key cannot create a team)',
  invitedPersonalKey: "a personal key of the invitation's e-mail address",
  owner: "the team's owner",
  coverInvitedRole: 'your key and role must hold every permission of the role given',
  coverMemberRoles: "your key and role must hold every permission of the member's current role and of the new one; not the owner",
  coverRemovedMember: "your key and role must hold every permission of the member's role; not the owner",
  coverNewRole: 'your key and role must hold every permission the role grants',
  coverChangedRole: 'your key and role must hold every permission of the role as it is and as it becomes; not the owner role',
  coverRemovedRole: 'your key and role must hold every permission of the role; not the owner role',
} as const;

// Re-exported for modules that took the role schema from here before it moved to teams-types.ts.
export { RoleObject };

/**
 * Teams, members, invitations and roles (contract §3). They act on the current team: the team of a team key, or
 * the one team a personal key's user owns.
 */
export async function teamsRoutes(app: TypedApp, { teams }: { teams: TeamsService }): Promise<void> {
  app.post(
    '/api/v0/team/',
    {
      config: { category: 'user_write', requires: REQUIRES.personalKey },
      schema: {
        tags,
        summary: 'Create a team; its creator is its owner',
        body: CreateTeamBody,
        response: {
          200: CreateTeamReply,
          ...errors,
        },
      },
    },
    async (request) => teams.create(principalOf(request), request.body.team_name),
  );

  app.delete(
    '/api/v0/team/',
    { config: { category: 'team_write', requires: REQUIRES.owner }, schema: { tags, summary: 'Delete the team (owner only); its keys are revoked', response: { 200: Ok, ...errors } } },
    async (request) => teams.remove(principalOf(request)),
  );

  app.get(
    '/api/v0/team/members/',
    {
      config: { category: 'team_read' },
      schema: {
        tags,
        summary: 'List the members and pending invitations',
        response: {
          200: MembersReply,
          ...errors,
        },
      },
    },
    async (request) => teams.members(principalOf(request)),
  );

  app.post(
    '/api/v0/team/invite/',
    {
      config: { category: 'team_write', requires: REQUIRES.coverInvitedRole },
      schema: {
        tags,
        summary: 'Invite by e-mail with a role; the code goes to that address (the outbox in emulator mode)',
        querystring: InviteQuery,
        response: { 200: Ok, ...errors },
      },
    },
    async (request) => teams.invite(principalOf(request), request.query.email, request.query.role),
  );

  app.post(
    '/api/v0/team/invitations/accept/',
    {
      config: { category: 'user_write', requires: REQUIRES.invitedPersonalKey },
      schema: {
        tags,
        summary: 'Accept an invitation with the code from the e-mail (personal key of the invited address)',
        body: AcceptBody,
        response: {
          200: AcceptReply,
          ...errors,
        },
      },
    },
    async (request) => teams.accept(principalOf(request), request.body.code),
  );

  app.put(
    '/api/v0/team/members/:id/',
    {
      config: { category: 'team_write', requires: REQUIRES.coverMemberRoles },
      schema: {
        tags,
        summary: "Change a member's role (applies from their next request)",
        params: UserId,
        body: MemberRoleBody,
        response: { 200: Ok, ...errors },
      },
    },
    async (request) => teams.setMemberRole(principalOf(request), request.params.id, request.body.role),
  );

  app.delete(
    '/api/v0/team/members/:id/',
    {
      config: { category: 'team_write', requires: REQUIRES.coverRemovedMember },
      schema: { tags, summary: 'Remove a member (by user id); their team keys stop working', params: UserId, response: { 200: Ok, ...errors } },
    },
    async (request) => teams.removeMember(principalOf(request), request.params.id),
  );

  app.get(
    '/api/v0/team/roles/:name/',
    {
      config: { category: 'team_read' },
      schema: { tags, summary: 'Show a team role by name (404 when missing)', params: RoleName, response: { 200: RoleObject, ...errors } },
    },
    async (request) => teams.roles.show(principalOf(request), request.params.name),
  );

  app.get(
    '/api/v0/team/roles-full/',
    {
      config: { category: 'team_read' },
      schema: { tags, summary: 'List the team roles (all but the built-in owner role)', response: { 200: RoleList, ...errors } },
    },
    async (request) => teams.roles.list(principalOf(request)),
  );

  app.post(
    '/api/v0/team/roles/',
    {
      config: { category: 'team_write', requires: REQUIRES.coverNewRole },
      schema: {
        tags,
        summary: 'Create a team role (never with more rights than your own)',
        body: CreateRoleBody,
        response: { 200: RoleReply, ...errors },
      },
    },
    async (request) => teams.roles.create(principalOf(request), request.body),
  );

  app.put(
    '/api/v0/team/roles/:id/',
    {
      config: { category: 'team_write', requires: REQUIRES.coverChangedRole },
      schema: {
        tags,
        summary: "Update a team role by numeric id; its members' keys follow from their next request",
        params: UserId,
        body: UpdateRoleBody,
        response: { 200: RoleReply, ...errors },
      },
    },
    async (request) => teams.roles.update(principalOf(request), request.params.id, request.body ?? {}),
  );

  app.delete(
    '/api/v0/team/roles/:name/',
    {
      config: { category: 'team_write', requires: REQUIRES.coverRemovedRole },
      schema: { tags, summary: 'Remove a team role by name', params: RoleName, response: { 200: Ok, ...errors } },
    },
    async (request) => teams.roles.remove(principalOf(request), request.params.name),
  );
}
