/**
 * What other features read of teams' membership (issue 31: team members with instance access reach the team's
 * instances with their own SSH keys): which members' roles allow a permission category, read for many teams at once in
 * the caller's transaction, and the same set as a subquery for a statement of theirs. The SQL is the teams store's.
 */
import type { Tx } from '../platform/db/connect.js';
import { allows, type Category, type PermissionDoc } from '../platform/permissions.js';
import { membersAllowingSql, teamsStore } from './teams-store.js';

export { membersAllowingSql };

/**
 * The user ids of each team's members whose role allows `category` (the built-in owner role is full access), in
 * membership order; a team without such a member (or no team at all) is absent. One statement for all the teams.
 */
export async function memberIdsAllowing(teamIds: readonly number[], category: Category, tx: Tx): Promise<Map<number, number[]>> {
  const out = new Map<number, number[]>();
  const ids = [...new Set(teamIds)];
  const store = teamsStore(tx);
  // In batches: bound parameters stay far below SQLite's and PostgreSQL's limits.
  for (let i = 0; i < ids.length; i += 1000) {
    for (const m of await store.membersWithPermissions(ids.slice(i, i + 1000), tx)) {
      // As auth reads a role (team-roles-service.ts `roleDoc`): no document is full access.
      const doc = m.permissions ? (JSON.parse(m.permissions) as PermissionDoc) : null;
      if (allows(doc, category)) out.set(m.team_id, [...(out.get(m.team_id) ?? []), m.user_id]);
    }
  }
  return out;
}
