import { sql, type Kysely } from 'kysely';
import type { DialectMigration } from '../platform/db/migrations.js';

/**
 * 0036_machines_version_at_commit (until issue 30, 0028_fleet_version_at_commit) (PostgreSQL only): a fleet write
 * stamps its machines with the next fleet version when it commits, not when it touches them. The offer index of every
 * process trusts that a machine stamped with version V committed no later than the state row's V (fleet-index.ts), so
 * versions must be taken in commit order: until now every fleet writer took the state row's lock first and held it for
 * its whole transaction, which made every rent and destroy on PostgreSQL wait for the one before it (bench `pg-mixed`).
 * Now `bump` only marks its machines (`SET version = version`); this deferred trigger runs at commit, takes the state
 * row's lock for the commit alone, bumps it once per transaction and stamps the marked machines. SQLite has one writer
 * at a time and needs none. Inserts are not marked: whoever inserts a machine bumps it (or seeds at version 1 with the
 * state row).
 */
export const machinesVersionAtCommitMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    if (dialect !== 'postgres') return;
    await sql`
      CREATE FUNCTION fleet_stamp_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE v bigint;
      BEGIN
        v := nullif(current_setting('gpuplane.fleet_version', true), '')::bigint;
        IF v IS NULL THEN
          UPDATE fleet_state SET version = version + 1 WHERE id = 1 RETURNING version INTO v;
          IF v IS NULL THEN RETURN NULL; END IF;
          PERFORM set_config('gpuplane.fleet_version', v::text, true);
        END IF;
        UPDATE fleet_machines SET version = v WHERE id = NEW.id AND version IS DISTINCT FROM v;
        RETURN NULL;
      END $$`.execute(db);
    // WHEN: the trigger's own stamping (depth 1) is not marked again.
    await sql`
      CREATE CONSTRAINT TRIGGER fleet_machines_version_at_commit
      AFTER UPDATE OF version ON fleet_machines DEFERRABLE INITIALLY DEFERRED
      FOR EACH ROW WHEN (pg_trigger_depth() = 0) EXECUTE FUNCTION fleet_stamp_at_commit()`.execute(db);
  },
});
