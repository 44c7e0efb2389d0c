import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/**
 * 0023_billing_payments (until issue 30, 0017_billing_payments): credit moving into or out of an account other than by
 * charges (billing-tables.ts BillingPaymentsTable): what invoices show as `payment` rows.
 */
export const billingPaymentsMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    await col
      .id(db.schema.createTable('billing_payments'), dialect)
      .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('amount_micro', 'bigint', (c) => c.notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('counterparty_id', 'integer')
      .addColumn('description', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('billing_payments_user').on('billing_payments').columns(['user_id', 'created_at']).execute();
  },
});
