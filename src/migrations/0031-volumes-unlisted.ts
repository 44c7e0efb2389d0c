import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/**
 * 0031_volumes_unlisted: machines whose host unlisted their volume offer (`unlist volume`), a row while unlisted.
 * Until issue 30, part of 0022_prepay_benchmarks.
 */
export const volumesUnlistedMigration: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('volume_unlisted')
      .addColumn('machine_id', 'integer', (c) => c.primaryKey())
      .addColumn('unlisted_at', col.time, (c) => c.notNull())
      .execute();
  },
});
