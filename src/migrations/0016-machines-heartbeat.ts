import { sql, type Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/**
 * 0016_machines_heartbeat (until issue 30, 0011_fleet_heartbeat): each machine's last heartbeat (fleet-heartbeat.ts).
 * The index is partial, on `fault`, not on `heartbeat_at`: the heartbeat job rewrites `heartbeat_at` of every healthy
 * machine, and an index on that column would be rewritten with it (and would stop PostgreSQL's in-place HOT updates);
 * only faulted machines are searched.
 */
export const machinesHeartbeatMigration: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable('fleet_machines').addColumn('heartbeat_at', col.time).execute();
    await db.updateTable('fleet_machines').set({ heartbeat_at: sql`created_at` }).execute();
    await db.schema.createIndex('fleet_machines_fault').on('fleet_machines').column('fault').where(sql.ref('fault'), 'is not', null).execute();
  },
});
