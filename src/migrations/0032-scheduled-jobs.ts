import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/** 0032_scheduled_jobs (until issue 30, 0023_scheduled_jobs): scheduled jobs (scheduled-jobs-tables.ts). */
export const scheduledJobsMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    await col
      .id(db.schema.createTable('scheduled_jobs'), dialect)
      .addColumn('owner', 'text', (c) => c.notNull())
      .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('team_id', 'integer')
      .addColumn('key_id', 'integer', (c) => c.notNull().references('api_keys.id').onDelete('cascade'))
      .addColumn('instance_id', 'integer')
      .addColumn('api_endpoint', 'text', (c) => c.notNull())
      .addColumn('request_method', 'text', (c) => c.notNull())
      .addColumn('request_body', 'text', (c) => c.notNull())
      .addColumn('start_time', col.time, (c) => c.notNull())
      .addColumn('end_time', col.time, (c) => c.notNull())
      .addColumn('frequency', 'text', (c) => c.notNull())
      .addColumn('day_of_the_week', 'integer')
      .addColumn('hour_of_the_day', 'integer')
      .addColumn('min_of_the_hour', 'integer', (c) => c.notNull())
      .addColumn('dedupe_key', 'text', (c) => c.notNull())
      .addColumn('next_run_at', col.time)
      .addColumn('run_count', 'integer', (c) => c.notNull())
      .addColumn('last_run_at', col.time)
      .addColumn('last_run_status', 'integer')
      .addColumn('last_run_msg', 'text')
      .addColumn('created_at', col.time, (c) => c.notNull())
      .addColumn('updated_at', col.time, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('scheduled_jobs_dedupe').unique().on('scheduled_jobs').column('dedupe_key').execute();
    await db.schema.createIndex('scheduled_jobs_owner').on('scheduled_jobs').column('owner').execute();
    await db.schema.createIndex('scheduled_jobs_instance').on('scheduled_jobs').column('instance_id').execute();
  },
});
