import type { Kysely } from 'kysely';
import type { DialectMigration } from '../platform/db/migrations.js';

/**
 * 0052_serverless_worker_reports (issue 33 item 5: serverless on real hosts): each worker the autoscaler rents gets a
 * MASTER_TOKEN of its own in its environment; the client's pyworker sends it with every report
 * (`POST /worker_status/`, `POST /delete_requests/`), and only its SHA-256 is kept here. The last report's figures are
 * kept beside it: whether the model is loaded, its error, its load and measured performance, and when it reported,
 * which the router and `get_endpoint_workers` read.
 */
export const serverlessWorkerReportsMigration: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable('serverless_workers').addColumn('mtoken_hash', 'text').execute();
    await db.schema.alterTable('serverless_workers').addColumn('reported_at', 'integer').execute();
    await db.schema.alterTable('serverless_workers').addColumn('loaded', 'integer', (c) => c.notNull().defaultTo(0)).execute();
    await db.schema.alterTable('serverless_workers').addColumn('error_msg', 'text').execute();
    await db.schema.alterTable('serverless_workers').addColumn('cur_load', 'double precision', (c) => c.notNull().defaultTo(0)).execute();
    await db.schema.alterTable('serverless_workers').addColumn('max_perf', 'double precision', (c) => c.notNull().defaultTo(0)).execute();
    await db.schema.alterTable('serverless_workers').addColumn('cur_perf', 'double precision', (c) => c.notNull().defaultTo(0)).execute();
    await db.schema.alterTable('serverless_workers').addColumn('reported_url', 'text').execute();
  },
});
