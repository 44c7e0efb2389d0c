import { sql, type Kysely } from 'kysely';
import type { DialectMigration } from '../platform/db/migrations.js';

/**
 * 0017_billing_rates (until issue 30, 0012_billing_rates): each user's running totals over their running meters
 * (billing_rates, see billing-tables.ts), filled from the meters already running.
 */
export const billingRatesMigration: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('billing_rates')
      .addColumn('user_id', 'integer', (c) => c.primaryKey())
      .addColumn('rate_micro_per_hour', 'bigint', (c) => c.notNull())
      .addColumn('accrued', 'bigint', (c) => c.notNull())
      .addColumn('ref_at', 'bigint', (c) => c.notNull())
      .addColumn('charged_micro', 'bigint', (c) => c.notNull())
      .execute();
    await fillBillingRates(db);
  },
});

/** Computes every user's running totals from the running meters (into an empty billing_rates). */
export async function fillBillingRates(db: Kysely<any>): Promise<void> {
  await sql`
      INSERT INTO billing_rates (user_id, rate_micro_per_hour, accrued, ref_at, charged_micro)
      SELECT user_id, SUM(rate_micro_per_hour), SUM(rate_micro_per_hour * (s.ref - seg_start)), s.ref, SUM(seg_charged_micro)
      FROM billing_meters JOIN (SELECT user_id AS uid, MAX(seg_start) AS ref FROM billing_meters WHERE running = 1 GROUP BY user_id) s
        ON s.uid = billing_meters.user_id
      WHERE running = 1
      GROUP BY user_id, s.ref`.execute(db);
}
