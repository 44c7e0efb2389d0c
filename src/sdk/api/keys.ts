/** API keys, teams and team roles (contract §3). */
import type { Static } from 'typebox';
import type { ApiKeyObject, ApiKeysReply, CreateApiKeyBody, CreateApiKeyReply, DeleteApiKeyReply, ResetApiKeyReply } from '../../keys/keys-schemas.js';
import type {
  AcceptReply,
  CreateRoleBody,
  CreateTeamReply,
  MembersReply,
  RoleList,
  RoleObject,
  RoleReply,
  TeamOk,
  UpdateRoleBody,
} from '../../teams/teams-types.js';
import type { Transport } from '../transport.js';

/**
 * Body of `POST /api/v0/auth/apikeys/`. `permissions`: `{"api": {"<category>": {}, ...}}`; omitted: the rights of the
 * calling key. `team_id`: a team you belong to, for a key that acts for that team.
 */
export type CreateApiKey = Static<typeof CreateApiKeyBody>;
export type ApiKey = Static<typeof ApiKeyObject>;
export type TeamRole = Static<typeof RoleObject>;
type Ok = Static<typeof TeamOk>;

export function apiKeysApi(t: Transport) {
  return {
    create: (body: CreateApiKey) => t.request<Static<typeof CreateApiKeyReply>>('POST', '/api/v0/auth/apikeys/', { body, idempotent: true }),
    list: () => t.request<Static<typeof ApiKeysReply>>('GET', '/api/v0/auth/apikeys/'),
    show: (id: number) => t.request<ApiKey>('GET', `/api/v0/auth/apikeys/${id}/`),
    remove: (id: number) => t.request<Static<typeof DeleteApiKeyReply>>('DELETE', `/api/v0/auth/apikeys/${id}/`, { body: {} }),
    /** Replaces the key this client uses: it stops working at once; use `new_api_key` from now on. */
    reset: () => t.request<Static<typeof ResetApiKeyReply>>('PUT', '/api/v0/commands/reset_apikey/', { body: { client_id: 'me' } }),
  };
}

export function teamApi(t: Transport) {
  return {
    create: (team_name: string) => t.request<Static<typeof CreateTeamReply>>('POST', '/api/v0/team/', { body: { team_name }, idempotent: true }),
    destroy: () => t.request<Ok>('DELETE', '/api/v0/team/', { body: {} }),
    members: () => t.request<Static<typeof MembersReply>>('GET', '/api/v0/team/members/'),
    invite: (email: string, role: string) => t.request<Ok>('POST', '/api/v0/team/invite/', { query: { email, role }, body: {} }),
    /** Accepts an invitation with the code e-mailed to the invited address (that account's personal key). */
    accept: (code: string) => t.request<Static<typeof AcceptReply>>('POST', '/api/v0/team/invitations/accept/', { body: { code } }),
    setMemberRole: (userId: number, role: string) => t.request<Ok>('PUT', `/api/v0/team/members/${userId}/`, { body: { role } }),
    removeMember: (userId: number) => t.request<Ok>('DELETE', `/api/v0/team/members/${userId}/`, { body: {} }),
    role: (name: string) => t.request<TeamRole>('GET', `/api/v0/team/roles/${encodeURIComponent(name)}/`),
    roles: () => t.request<Static<typeof RoleList>>('GET', '/api/v0/team/roles-full/'),
    createRole: (name: string, permissions: Static<typeof CreateRoleBody>['permissions']) =>
      t.request<Static<typeof RoleReply>>('POST', '/api/v0/team/roles/', { body: { name, permissions }, idempotent: true }),
    updateRole: (id: number, body: Static<typeof UpdateRoleBody>) => t.request<Static<typeof RoleReply>>('PUT', `/api/v0/team/roles/${id}/`, { body }),
    removeRole: (name: string) => t.request<Ok>('DELETE', `/api/v0/team/roles/${encodeURIComponent(name)}/`, { body: {} }),
  };
}
