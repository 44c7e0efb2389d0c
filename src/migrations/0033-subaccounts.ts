import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/**
 * 0033_subaccounts (until issue 30, 0024_subaccounts): which accounts are subaccounts of which (subaccounts-tables.ts).
 */
export const subaccountsMigration: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('subaccounts')
      .addColumn('user_id', 'integer', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
      .addColumn('parent_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('username', 'text')
      .addColumn('host_only', 'integer', (c) => c.notNull())
      .addColumn('created_at', col.time, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('subaccounts_parent').on('subaccounts').column('parent_id').execute();
  },
});
