import { sql, type Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/**
 * 0015_hosting: what a host sets on its machines (client-compat-more.md §a). The listing columns live on the
 * fleet's machine rows (written only by fleet functions, fleet-hosting.ts) because the offer index reads them with
 * the machine: `listed`, `min_chunk`, `credit_discount_max`, `listing_duration` (seconds of a `duration` listing),
 * `maint` (JSON list of maintenance windows) and `deleted` (force_delete keeps the row: instances and other
 * processes' offer indexes still refer to it). Every existing machine (the simulated fleet) stays listed.
 * The hosting feature's own table holds default jobs (`create_bids`).
 */
export const hostingMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable('fleet_machines').addColumn('listed', 'integer', (c) => c.notNull().defaultTo(1)).execute();
    await db.schema.alterTable('fleet_machines').addColumn('deleted', 'integer', (c) => c.notNull().defaultTo(0)).execute();
    await db.schema.alterTable('fleet_machines').addColumn('min_chunk', 'integer', (c) => c.notNull().defaultTo(1)).execute();
    await db.schema.alterTable('fleet_machines').addColumn('credit_discount_max', sql`double precision`, (c) => c.notNull().defaultTo(0.4)).execute();
    await db.schema.alterTable('fleet_machines').addColumn('listing_duration', col.time).execute();
    await db.schema.alterTable('fleet_machines').addColumn('maint', 'text').execute();
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
