import { sql, type Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/**
 * 0051_volume_asks (issue 33 item 2, volumes on real hosts):
 * - `volume_asks`: what a host's `list machine` (`create_asks`) says of the machine's volume offer: `vol_size`, the
 *   GB offered for volumes (null: half the machine's free disk, as the vastai client documents), and `vol_price`,
 *   $/GB/month in micro-dollars (null: the machine's `price_disk`). A machine without a row offers its free disk at
 *   `price_disk`, as before. `vol_size` 0 stays the unlisting of 0031_volume_unlisted.
 * - PostgreSQL: a volume made or deleted changes its machine's desired state (the agent makes or removes the Docker
 *   volume), so `volumes` notifies the change feed of 0037_agent_desired_notify, whose function names any table with
 *   a `machine_id` column. SQLite needs none (0037).
 */
export const volumeAsksMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('volume_asks')
      .addColumn('machine_id', 'integer', (c) => c.primaryKey())
      .addColumn('size_gb', 'integer')
      .addColumn('price_disk_micro', 'bigint')
      .addColumn('updated_at', col.time, (c) => c.notNull())
      .execute();
    if (dialect !== 'postgres') return;
    await sql`CREATE TRIGGER volumes_desired_notify AFTER INSERT OR UPDATE OR DELETE ON volumes
      FOR EACH ROW EXECUTE FUNCTION gpuplane_desired_notify()`.execute(db);
  },
});
