import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/**
 * 0022_env_vars (until issue 30, 0016_env_vars): account environment variables (env-vars-tables.ts); one name per
 * owner.
 */
export const envVarsMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    await col
      .id(db.schema.createTable('env_vars'), dialect)
      .addColumn('owner', 'text', (c) => c.notNull())
      .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('value_sealed', 'text', (c) => c.notNull())
      .addColumn('created_at', col.time, (c) => c.notNull())
      .addColumn('updated_at', col.time, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('env_vars_owner_name').unique().on('env_vars').columns(['owner', 'name']).execute();
  },
});
