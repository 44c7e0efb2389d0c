import { sql, type Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/**
 * 0028_billing_deposits: prepaid deposits (billing-tables.ts BillingDepositsTable): one per contract, and on each meter
 * whether the deposit pays it (`funded`) and the list rate it returns to when the deposit is spent. Until issue 30,
 * part of 0022_prepay_benchmarks.
 */
export const billingDepositsMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    await col
      .id(db.schema.createTable('billing_deposits'), dialect)
      .addColumn('contract_id', 'integer', (c) => c.notNull().unique().references('billing_contracts.id').onDelete('cascade'))
      .addColumn('user_id', 'integer', (c) => c.notNull())
      .addColumn('remaining_micro', 'bigint', (c) => c.notNull())
      .addColumn('prepaid_micro', 'bigint', (c) => c.notNull())
      .addColumn('refunded_micro', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('discount_ppm', 'integer', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addColumn('closed_at', 'bigint')
      .execute();
    await db.schema.createIndex('billing_deposits_user').on('billing_deposits').columns(['user_id', 'closed_at']).execute();
    await db.schema.alterTable('billing_meters').addColumn('funded', 'integer', (c) => c.notNull().defaultTo(0)).execute();
    await db.schema.alterTable('billing_meters').addColumn('list_rate_micro_per_hour', sql`bigint`).execute();
  },
});
