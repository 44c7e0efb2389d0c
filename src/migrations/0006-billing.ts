import { sql, type Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/** 0006_billing (until issue 30, 0008_billing): contracts, their meters and daily charges (billing-tables.ts). */
export const billingMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    await col
      .id(db.schema.createTable('billing_contracts'), dialect)
      .addColumn('source', 'text', (c) => c.notNull().unique())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('user_id', 'integer', (c) => c.notNull())
      .addColumn('team_id', 'integer')
      .addColumn('description', 'text', (c) => c.notNull())
      .addColumn('metadata', 'text', (c) => c.notNull())
      .addColumn('workergroup_source', 'text')
      .addColumn('endpoint_source', 'text')
      .addColumn('tree_key', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('start_at', 'bigint', (c) => c.notNull())
      .addColumn('end_at', 'bigint', (c) => c.notNull())
      .addColumn('live', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
    // Covering the charges filter, so a page and its total read the index alone.
    const filterColumns = ['start_at', 'end_at', 'live', 'type'];
    await db.schema.createIndex('billing_contracts_owner').on('billing_contracts').columns(['user_id', 'team_id', 'id', ...filterColumns]).execute();
    await db.schema.createIndex('billing_contracts_tree').on('billing_contracts').columns(['user_id', 'team_id', 'tree_key', ...filterColumns]).execute();
    await db.schema.createIndex('billing_contracts_endpoint').on('billing_contracts').column('endpoint_source').execute();

    await col
      .id(db.schema.createTable('billing_meters'), dialect)
      .addColumn('contract_id', 'integer', (c) => c.notNull().references('billing_contracts.id').onDelete('cascade'))
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('user_id', 'integer', (c) => c.notNull())
      .addColumn('rate_micro_per_hour', 'bigint', (c) => c.notNull())
      .addColumn('seg_start', 'bigint', (c) => c.notNull())
      .addColumn('settled_until', 'bigint', (c) => c.notNull())
      .addColumn('seg_charged_micro', 'bigint', (c) => c.notNull())
      .addColumn('running', 'integer', (c) => c.notNull())
      .addUniqueConstraint('billing_meters_item', ['contract_id', 'kind'])
      .execute();
    // Not on settled_until: settling moves it on every running meter, and index upkeep would double the work.
    await db.schema.createIndex('billing_meters_running').on('billing_meters').column('running').execute();
    await db.schema.createIndex('billing_meters_user').on('billing_meters').columns(['user_id', 'running']).execute();

    // Keyed by (contract, kind, day) with no row id: on SQLite (WITHOUT ROWID) a contract's rows lie together in the
    // key's order, so a page reads them as a few short ranges.
    let charges = db.schema
      .createTable('billing_charges')
      .addColumn('contract_id', 'integer', (c) => c.notNull().references('billing_contracts.id').onDelete('cascade'))
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('day', 'bigint', (c) => c.notNull())
      .addColumn('amount_micro', 'bigint', (c) => c.notNull())
      .addColumn('start_at', 'bigint', (c) => c.notNull())
      .addColumn('end_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('billing_charges_pk', ['contract_id', 'kind', 'day']);
    if (dialect === 'sqlite') charges = charges.modifyEnd(sql`WITHOUT ROWID`);
    await charges.execute();
  },
});
