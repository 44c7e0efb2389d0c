import type { Kysely } from 'kysely';
import type { DialectMigration } from './platform/db/migrations.js';
import { billingDepositsMigration } from './billing/billing-deposits-migration.js';
import { benchmarksMigration } from './benchmarks/benchmarks-migration.js';
import { volumesUnlistedMigration } from './volumes/volumes-unlisted-migration.js';
import { clustersMigration } from './clusters/clusters-migration.js';

/**
 * 0022: issue 14's account and host extras, one migration number: each feature's part creates only its own tables
 * (billing's prepaid deposits, benchmarks, host clusters, volume offer listings), in this order.
 */
const PARTS: DialectMigration[] = [billingDepositsMigration, benchmarksMigration, clustersMigration, volumesUnlistedMigration];

export const prepayBenchmarksMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    for (const part of PARTS) await part(dialect).up(db);
  },
});
