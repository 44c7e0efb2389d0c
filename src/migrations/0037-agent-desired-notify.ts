import { sql, type Kysely } from 'kysely';
import type { DialectMigration } from '../platform/db/migrations.js';

/**
 * The PostgreSQL channel on which a machine's desired state may have changed: payload `<schema>:<machine id>`. Written
 * out here, not imported: a migration does what it did when it was applied, whatever the code around it becomes. The
 * listener's name for it is agent-server-changes.ts `DESIRED_CHANNEL` (agent-changes.test.ts ties the two).
 */
const DESIRED_CHANNEL = 'gpuplane_desired';

/**
 * 0037_agent_desired_notify (until issue 30, 0030_agent_desired_notify): on PostgreSQL, every write to a table a
 * machine's desired state is built from (agent-server-store.ts `fingerprints`) sends `NOTIFY gpuplane_desired
 * '<schema>:<machine id>'`, delivered at commit to every server process that listens (agent-server-changes.ts). So a
 * process learns which machines changed in any process without reading the fingerprints of all its held long-polls
 * every 100 ms. PostgreSQL folds a transaction's equal notifications into one. A machine's key changing notifies too
 * (agent-server-service.ts caches which machine a key is). SQLite needs none: one process writes its file, and
 * `PRAGMA data_version` tells it the rest.
 * The agent server owns it although its triggers sit on the instances' and SSH keys' tables: the function and its
 * triggers are one mechanism, the agent server's change feed, and they write nothing.
 */
export const agentDesiredNotifyMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    if (dialect !== 'postgres') return;
    await sql`
      CREATE OR REPLACE FUNCTION gpuplane_desired_notify() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        r record;
        m bigint;
      BEGIN
        IF TG_OP = 'DELETE' THEN r := OLD; ELSE r := NEW; END IF;
        IF TG_TABLE_NAME = 'instances' THEN
          IF r.machine_id IS NOT NULL THEN PERFORM pg_notify('${sql.raw(DESIRED_CHANNEL)}', TG_TABLE_SCHEMA || ':' || r.machine_id); END IF;
          IF TG_OP = 'UPDATE' AND OLD.machine_id IS DISTINCT FROM NEW.machine_id AND OLD.machine_id IS NOT NULL THEN
            PERFORM pg_notify('${sql.raw(DESIRED_CHANNEL)}', TG_TABLE_SCHEMA || ':' || OLD.machine_id);
          END IF;
        ELSIF TG_TABLE_NAME = 'instance_ssh_keys' THEN
          SELECT machine_id INTO m FROM instances WHERE id = r.instance_id;
          IF m IS NOT NULL THEN PERFORM pg_notify('${sql.raw(DESIRED_CHANNEL)}', TG_TABLE_SCHEMA || ':' || m); END IF;
        ELSIF TG_TABLE_NAME = 'ssh_keys' THEN
          -- A renter's account keys go into every container of theirs.
          FOR m IN SELECT DISTINCT machine_id FROM instances WHERE user_id = r.user_id AND destroyed_at IS NULL AND machine_id IS NOT NULL LOOP
            PERFORM pg_notify('${sql.raw(DESIRED_CHANNEL)}', TG_TABLE_SCHEMA || ':' || m);
          END LOOP;
        ELSIF r.machine_id IS NOT NULL THEN
          PERFORM pg_notify('${sql.raw(DESIRED_CHANNEL)}', TG_TABLE_SCHEMA || ':' || r.machine_id);
        END IF;
        RETURN NULL;
      END
      $$`.execute(db);
    for (const table of ['instances', 'instance_ssh_keys', 'ssh_keys', 'agent_log_requests', 'instance_commands', 'instance_snapshots']) {
      await sql`CREATE TRIGGER ${sql.raw(`${table}_desired_notify`)} AFTER INSERT OR UPDATE OR DELETE ON ${sql.table(table)}
        FOR EACH ROW EXECUTE FUNCTION gpuplane_desired_notify()`.execute(db);
    }
    // A machine's key changed (a new registration, a revoke) or its row went: cached authentications of it end.
    // Not on every update: heartbeats write this row every few seconds, and nothing cached depends on their columns.
    await sql`CREATE TRIGGER agent_machines_key_notify AFTER UPDATE OF key_hash OR DELETE ON agent_machines
      FOR EACH ROW EXECUTE FUNCTION gpuplane_desired_notify()`.execute(db);
  },
});
