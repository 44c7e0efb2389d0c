import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/** 0043_login_throttles (until issue 30, 0045_login_throttles): the password throttle's counters (login-tables.ts). */
export const loginThrottlesMigration: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('login_throttles')
      .addColumn('scope_key', 'text', (c) => c.primaryKey())
      .addColumn('account', 'text')
      .addColumn('fail_count', 'integer', (c) => c.notNull())
      .addColumn('last_failed_at', col.time, (c) => c.notNull())
      .addColumn('blocked_until', col.time)
      .addColumn('familiar', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('alerted_at', col.time)
      .execute();
    await db.schema.createIndex('login_throttles_account').on('login_throttles').column('account').execute();
  },
});
