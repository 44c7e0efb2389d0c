import { sql, type Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/**
 * 0020_machines_listing: what a host sets on its machines (client-compat-more.md §a), kept on the machine rows
 * (written only by the machines feature, machines-hosting-store.ts) because the offer index reads them with the machine:
 * `listed`, `min_chunk`, `credit_discount_max`, `listing_duration` (seconds of a `duration` listing), `maint` (JSON
 * list of maintenance windows) and `deleted` (force_delete keeps the row: instances and other processes' offer
 * indexes still refer to it). Every existing machine (the simulated fleet) stays listed. Until issue 30, part of
 * 0015_hosting.
 */
export const machinesListingMigration: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable('fleet_machines').addColumn('listed', 'integer', (c) => c.notNull().defaultTo(1)).execute();
    await db.schema.alterTable('fleet_machines').addColumn('deleted', 'integer', (c) => c.notNull().defaultTo(0)).execute();
    await db.schema.alterTable('fleet_machines').addColumn('min_chunk', 'integer', (c) => c.notNull().defaultTo(1)).execute();
    await db.schema.alterTable('fleet_machines').addColumn('credit_discount_max', sql`double precision`, (c) => c.notNull().defaultTo(0.4)).execute();
    await db.schema.alterTable('fleet_machines').addColumn('listing_duration', col.time).execute();
    await db.schema.alterTable('fleet_machines').addColumn('maint', 'text').execute();
  },
});
