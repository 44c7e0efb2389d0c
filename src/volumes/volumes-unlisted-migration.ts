import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/** Machines whose host unlisted their volume offer (`unlist volume`): a row while unlisted. Part of 0022. */
export const volumesUnlistedMigration: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('volume_unlisted')
      .addColumn('machine_id', 'integer', (c) => c.primaryKey())
      .addColumn('unlisted_at', col.time, (c) => c.notNull())
      .execute();
  },
});
