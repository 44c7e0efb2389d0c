import { sql, type Kysely } from 'kysely';
import type { DialectMigration } from '../platform/db/migrations.js';

/** The channel of 0037_agent_desired_notify, written out here for the same reason as there. */
const DESIRED_CHANNEL = 'gpuplane_desired';

/**
 * 0047_team_keys_notify (issue 31: team members with instance access reach a team's instances with their own account
 * keys): on PostgreSQL, the change feed of 0037_agent_desired_notify follows the team members' keys too. A machine's
 * desired state puts into a team's instance the account SSH keys of every member whose role allows instance_write
 * (agent-server-desired-reads.ts), so its fingerprint reads them (agent-server-store.ts `fingerprints`, part `t`), and
 * a write that can change them notifies the machines of the team's live instances:
 * - `ssh_keys`: the function is replaced so that a user's key change also notifies the machines of the live instances
 *   of every team they are a member of (whatever their role: a notice more makes a process re-read a fingerprint,
 *   one less would leave a held long-poll on a stale state until its safety re-read);
 * - `team_members` (insert, update, delete): a member joining, leaving or changing role, the machines of that team's
 *   live instances (on an update that moves a member between teams, both teams');
 * - `team_roles` (update of its permissions, delete): a role gaining or losing instance_write, the machines of its
 *   team's live instances.
 * The agent server owns it as it owns 0037, although its triggers sit on the teams' tables: the function and its
 * triggers are one mechanism, the agent server's change feed, and they write nothing. SQLite needs none (0037).
 */
export const teamKeysNotifyMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    if (dialect !== 'postgres') return;
    const channel = sql.raw(`'${DESIRED_CHANNEL}'`);
    await sql`
      CREATE OR REPLACE FUNCTION gpuplane_desired_notify() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        r record;
        m bigint;
        t bigint;
        was bigint;
      BEGIN
        IF TG_OP = 'DELETE' THEN r := OLD; ELSE r := NEW; END IF;
        IF TG_TABLE_NAME = 'instances' THEN
          IF r.machine_id IS NOT NULL THEN PERFORM pg_notify(${channel}, TG_TABLE_SCHEMA || ':' || r.machine_id); END IF;
          IF TG_OP = 'UPDATE' AND OLD.machine_id IS DISTINCT FROM NEW.machine_id AND OLD.machine_id IS NOT NULL THEN
            PERFORM pg_notify(${channel}, TG_TABLE_SCHEMA || ':' || OLD.machine_id);
          END IF;
        ELSIF TG_TABLE_NAME = 'instance_ssh_keys' THEN
          SELECT machine_id INTO m FROM instances WHERE id = r.instance_id;
          IF m IS NOT NULL THEN PERFORM pg_notify(${channel}, TG_TABLE_SCHEMA || ':' || m); END IF;
        ELSIF TG_TABLE_NAME = 'ssh_keys' THEN
          -- A renter's account keys go into every container of theirs, and a team member's into the team's.
          FOR m IN SELECT DISTINCT machine_id FROM instances
              WHERE destroyed_at IS NULL AND machine_id IS NOT NULL
                AND (user_id = r.user_id OR team_id IN (SELECT team_id FROM team_members WHERE user_id = r.user_id)) LOOP
            PERFORM pg_notify(${channel}, TG_TABLE_SCHEMA || ':' || m);
          END LOOP;
        ELSIF TG_TABLE_NAME IN ('team_members', 'team_roles') THEN
          -- Who of the team is let into its instances changed: their machines.
          t := r.team_id;
          IF TG_OP = 'UPDATE' THEN was := OLD.team_id; END IF;
          FOR m IN SELECT DISTINCT machine_id FROM instances
              WHERE destroyed_at IS NULL AND machine_id IS NOT NULL AND team_id IN (t, was) LOOP
            PERFORM pg_notify(${channel}, TG_TABLE_SCHEMA || ':' || m);
          END LOOP;
        ELSIF r.machine_id IS NOT NULL THEN
          PERFORM pg_notify(${channel}, TG_TABLE_SCHEMA || ':' || r.machine_id);
        END IF;
        RETURN NULL;
      END
      $$`.execute(db);
    await sql`CREATE TRIGGER team_members_desired_notify AFTER INSERT OR UPDATE OR DELETE ON team_members
      FOR EACH ROW EXECUTE FUNCTION gpuplane_desired_notify()`.execute(db);
    // A role's name alone changes nothing an agent runs; its permissions may (inserts: a new role has no members yet).
    await sql`CREATE TRIGGER team_roles_desired_notify AFTER UPDATE OF permissions OR DELETE ON team_roles
      FOR EACH ROW EXECUTE FUNCTION gpuplane_desired_notify()`.execute(db);
  },
});
