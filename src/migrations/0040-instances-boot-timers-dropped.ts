import { sql, type Kysely } from 'kysely';
import type { DialectMigration } from '../platform/db/migrations.js';

/**
 * 0040_instances_boot_timers_dropped: the instances' boot timers (`boot_step_at`, `boot_running_at`, their index and
 * the `instance.boot` jobs) go, now that the simulated hosts boot instances (0039 took their state over). Until
 * issue 30, the second part of 0032_simhost.
 */
export const instancesBootTimersDroppedMigration: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await sql`delete from jobs where kind = 'instance.boot'`.execute(db);
    await db.schema.dropIndex('instances_boot_step').execute();
    await db.schema.alterTable('instances').dropColumn('boot_step_at').execute();
    await db.schema.alterTable('instances').dropColumn('boot_running_at').execute();
  },
});
