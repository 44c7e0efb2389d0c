import type { Principal } from '../platform/auth.js';
import type { Clock } from '../platform/clock.js';
import { ApiError, badRequest, notFound } from '../platform/errors.js';
import { CATEGORIES, categoriesOf, docOf, isSubset, parsePermissionDoc, type Category, type PermissionDoc } from '../platform/permissions.js';
import type { RoleRow, TeamRow, TeamsStore } from './teams-store.js';
import type { Static } from 'typebox';
import { ROLE_NAME_MAX, type CreateRoleBody, type UpdateRoleBody } from './teams-types.js';

/** The built-in role of the team's creator: full access, never changed or removed, never given to anyone else. */
export const OWNER_ROLE = 'owner';

/** Roles every new team starts with (the real service makes owner, manager and member). */
export const DEFAULT_ROLES: Record<string, PermissionDoc> = {
  manager: docOf(CATEGORIES.filter((c) => c !== 'billing_write')),
  member: docOf(['misc', 'user_read', 'user_write', 'instance_read', 'instance_write', 'team_read']),
};

/** The spec's team role object: `permissions` is the list of categories the role grants. */
// A type alias (not an interface) so it is assignable to Record<string, unknown> (the CLI prints it as a row).
export type RoleView = {
  id: number;
  name: string;
  permissions: Category[];
  team_id: number;
};

export const roleDoc = (r: RoleRow): PermissionDoc | null => (r.permissions ? (JSON.parse(r.permissions) as PermissionDoc) : null);
const view = (r: RoleRow): RoleView => ({ id: r.id, name: r.name, permissions: categoriesOf(roleDoc(r)), team_id: r.team_id });

/**
 * A role's permissions arrive as the permission document (`{"api": {...}}`, as the vastai client sends it) or, as
 * the spec's role object shows them, a list of category names. Anything else is a 400 naming the problem.
 */
export function parseRoleInput(value: unknown): PermissionDoc {
  if (Array.isArray(value)) {
    const unknown = value.find((c) => typeof c !== 'string' || !(CATEGORIES as readonly string[]).includes(c));
    if (unknown !== undefined) throw badRequest(`body.permissions: unknown category ${JSON.stringify(unknown)}`);
    return docOf(value as Category[]);
  }
  const parsed = parsePermissionDoc(value);
  if (typeof parsed === 'string') throw badRequest(`body.${parsed}`);
  return parsed;
}

function checkName(name: string): string {
  const n = name.trim();
  if (n === '' || n.length > ROLE_NAME_MAX) throw badRequest(`body.name must be 1 to ${ROLE_NAME_MAX} characters`);
  if (n === OWNER_ROLE) throw badRequest(`body.name: "${OWNER_ROLE}" is the built-in role of the team's creator`);
  return n;
}

export interface RolesDeps {
  teams: TeamsStore;
  clock: Clock;
  currentTeam(p: Principal): Promise<TeamRow>;
}

/** Team roles (contract §3 Team roles; spec: Show team role). Nobody grants or edits rights they do not hold. */
export function rolesServiceFactory({ teams, clock, currentTeam }: RolesDeps) {
  function assertCovers(p: Principal, doc: PermissionDoc | null, what: string): void {
    if (!isSubset(doc, p.permissions)) throw new ApiError('permission_denied', `${what} needs rights your key (or role) does not have`);
  }

  async function conflictIfTaken(teamId: number, name: string, exceptId?: number): Promise<void> {
    const other = await teams.findRoleByName(teamId, name);
    if (other && other.id !== exceptId) throw new ApiError('conflict', `a role named ${JSON.stringify(name)} already exists`);
  }

  return {
    /** 404 with the error object when missing (spec). */
    async show(p: Principal, name: string): Promise<RoleView> {
      const team = await currentTeam(p);
      const role = await teams.findRoleByName(team.id, name);
      if (!role) throw notFound(`role ${JSON.stringify(name)}`);
      return view(role);
    },

    /** Every role but the built-in owner role, as the real service lists them. */
    async list(p: Principal): Promise<RoleView[]> {
      const team = await currentTeam(p);
      return (await teams.listRoles(team.id)).filter((r) => !r.is_owner).map(view);
    },

    async create(p: Principal, input: Static<typeof CreateRoleBody>) {
      const team = await currentTeam(p);
      const name = checkName(input.name);
      const doc = parseRoleInput(input.permissions);
      assertCovers(p, doc, `a role with ${categoriesOf(doc).join(', ') || 'no categories'}`);
      await conflictIfTaken(team.id, name);
      try {
        const role = await teams.insertRole({ team_id: team.id, name, permissions: JSON.stringify(doc), is_owner: 0, created_at: clock.now() });
        return { success: true as const, msg: `role ${name} created`, ...view(role) };
      } catch (err) {
        // Two concurrent creates of one name: the unique constraint decides; the loser gets the same 409.
        if (await teams.findRoleByName(team.id, name)) throw new ApiError('conflict', `a role named ${JSON.stringify(name)} already exists`);
        throw err;
      }
    },

    /** By numeric id (contract §3). Its members' team keys follow the new rights on their next request. */
    async update(p: Principal, id: number, input: Static<typeof UpdateRoleBody>) {
      const team = await currentTeam(p);
      const role = await teams.findRoleById(team.id, id);
      if (!role) throw notFound(`role ${id}`);
      if (role.is_owner) throw new ApiError('permission_denied', 'the owner role cannot be changed');
      assertCovers(p, roleDoc(role), `changing the role ${role.name}`);
      const set: { name?: string; permissions?: string } = {};
      if (input.name !== undefined && input.name !== null) {
        set.name = checkName(input.name);
        await conflictIfTaken(team.id, set.name, role.id);
      }
      if (input.permissions !== undefined && input.permissions !== null) {
        const doc = parseRoleInput(input.permissions);
        assertCovers(p, doc, `a role with ${categoriesOf(doc).join(', ') || 'no categories'}`);
        set.permissions = JSON.stringify(doc);
      }
      let updated = role;
      try {
        if (Object.keys(set).length) updated = await teams.updateRole(role.id, set);
      } catch (err) {
        // A concurrent rename to the same name: the unique constraint decides, as on create.
        if (set.name && (await teams.findRoleByName(team.id, set.name))) throw new ApiError('conflict', `a role named ${JSON.stringify(set.name)} already exists`);
        throw err;
      }
      return { success: true as const, msg: `role ${updated.name} updated`, ...view(updated) };
    },

    /** By name (contract §3). A role still held by members or pending invitations stays (409). */
    async remove(p: Principal, name: string) {
      const team = await currentTeam(p);
      const role = await teams.findRoleByName(team.id, name);
      if (!role) throw notFound(`role ${JSON.stringify(name)}`);
      if (role.is_owner) throw new ApiError('permission_denied', 'the owner role cannot be removed');
      assertCovers(p, roleDoc(role), `removing the role ${role.name}`);
      const inUse = await teams.roleUseCount(role.id, clock.now());
      if (inUse > 0) throw new ApiError('conflict', `role ${name} is held by ${inUse} member(s) or pending invitation(s); change their role first`);
      await teams.deleteRole(role.id);
      return { success: true as const, msg: `role ${name} removed` };
    },
  };
}

export type RolesService = ReturnType<typeof rolesServiceFactory>;
