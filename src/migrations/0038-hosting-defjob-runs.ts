import type { Kysely } from 'kysely';
import type { DialectMigration } from '../platform/db/migrations.js';

/**
 * 0038_hosting_defjob_runs (until issue 30, 0031_hosting_defjob_runs): a default job now runs (hosting-defjob.ts):
 * `instance_id` is the host's bid instance that runs it on the machine's idle GPUs (null while none could be placed),
 * `status_msg` why not, when it is not.
 */
export const hostingDefjobRunsMigration: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable('hosting_defjobs').addColumn('instance_id', 'integer').execute();
    await db.schema.alterTable('hosting_defjobs').addColumn('status_msg', 'text').execute();
  },
});
