import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/**
 * 0021_hosting_defjobs: the hosting feature's default jobs (`create_bids`, hosting-tables.ts), one per machine.
 * Until issue 30, part of 0015_hosting.
 */
export const hostingDefjobsMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    await col
      .id(db.schema.createTable('hosting_defjobs'), dialect)
      .addColumn('machine_id', 'integer', (c) => c.notNull())
      .addColumn('user_id', 'integer', (c) => c.notNull())
      .addColumn('price_gpu_micro', 'bigint', (c) => c.notNull())
      .addColumn('price_inetu_micro', 'bigint', (c) => c.notNull())
      .addColumn('price_inetd_micro', 'bigint', (c) => c.notNull())
      .addColumn('image', 'text', (c) => c.notNull())
      .addColumn('args', 'text')
      .addColumn('created_at', col.time, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('hosting_defjobs_machine').unique().on('hosting_defjobs').column('machine_id').execute();
  },
});
