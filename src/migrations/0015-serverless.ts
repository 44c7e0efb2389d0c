import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/**
 * 0015_serverless (until issue 30, 0010_serverless): endpoints, workergroups, their workers and the autoscaler's
 * decisions (serverless-tables.ts).
 */
export const serverlessMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    const num = 'double precision';
    await col
      .id(db.schema.createTable('serverless_endpoints'), dialect)
      .addColumn('user_id', 'integer', (c) => c.notNull())
      .addColumn('team_id', 'integer')
      .addColumn('endpoint_name', 'text', (c) => c.notNull())
      .addColumn('min_load', num, (c) => c.notNull())
      .addColumn('min_cold_load', num, (c) => c.notNull())
      .addColumn('target_util', num, (c) => c.notNull())
      .addColumn('cold_mult', num, (c) => c.notNull())
      .addColumn('cold_workers', 'integer', (c) => c.notNull())
      .addColumn('max_workers', 'integer', (c) => c.notNull())
      .addColumn('max_queue_time', num)
      .addColumn('target_queue_time', num)
      .addColumn('inactivity_timeout', num)
      .addColumn('load', num, (c) => c.notNull())
      .addColumn('created_at', col.time, (c) => c.notNull())
      .addColumn('deleted_at', col.time)
      .execute();
    await db.schema.createIndex('serverless_endpoints_owner').on('serverless_endpoints').columns(['user_id', 'team_id', 'deleted_at']).execute();
    await col
      .id(db.schema.createTable('serverless_workergroups'), dialect)
      .addColumn('endpoint_id', 'integer', (c) => c.notNull().references('serverless_endpoints.id'))
      .addColumn('user_id', 'integer', (c) => c.notNull())
      .addColumn('team_id', 'integer')
      .addColumn('template_hash', 'text', (c) => c.notNull())
      .addColumn('search_params', 'text', (c) => c.notNull())
      .addColumn('search_filter', 'text', (c) => c.notNull())
      .addColumn('launch_args', 'text')
      .addColumn('gpu_ram', num)
      .addColumn('min_load', num)
      .addColumn('target_util', num)
      .addColumn('cold_mult', num)
      .addColumn('cold_workers', 'integer')
      .addColumn('max_workers', 'integer')
      .addColumn('test_workers', 'integer')
      .addColumn('created_at', col.time, (c) => c.notNull())
      .addColumn('deleted_at', col.time)
      .execute();
    await db.schema.createIndex('serverless_workergroups_endpoint').on('serverless_workergroups').columns(['endpoint_id', 'deleted_at']).execute();
    await db.schema
      .createTable('serverless_workers')
      .addColumn('instance_id', 'integer', (c) => c.primaryKey())
      .addColumn('workergroup_id', 'integer', (c) => c.notNull())
      .addColumn('created_at', col.time, (c) => c.notNull())
      .addColumn('released_at', col.time)
      .execute();
    await db.schema.createIndex('serverless_workers_group').on('serverless_workers').columns(['workergroup_id', 'released_at']).execute();
    await col
      .id(db.schema.createTable('serverless_decisions'), dialect)
      .addColumn('workergroup_id', 'integer', (c) => c.notNull())
      .addColumn('at', col.time, (c) => c.notNull())
      .addColumn('load', num, (c) => c.notNull())
      .addColumn('workers_before', 'integer', (c) => c.notNull())
      .addColumn('target', 'integer', (c) => c.notNull())
      .addColumn('action', 'text', (c) => c.notNull())
      .addColumn('reason', 'text', (c) => c.notNull())
      .addColumn('instances', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('serverless_decisions_group').on('serverless_decisions').columns(['workergroup_id', 'id']).execute();
  },
});
