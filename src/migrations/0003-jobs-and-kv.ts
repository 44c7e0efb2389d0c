import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/**
 * 0003_jobs_and_kv: the platform's own tables (platform/db/schema.ts): the scheduler's due jobs and the kv state.
 * Until issue 30, part of 0001_foundation.
 */
export const jobsAndKvMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    await col
      .id(db.schema.createTable('jobs'), dialect)
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('due_at', col.time, (c) => c.notNull())
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('ref', 'text')
      .execute();
    await db.schema.createIndex('jobs_due').on('jobs').columns(['due_at', 'id']).execute();
    await db.schema.createIndex('jobs_ref').on('jobs').column('ref').execute();

    await db.schema
      .createTable('kv')
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('value', 'text', (c) => c.notNull())
      .execute();
  },
});
