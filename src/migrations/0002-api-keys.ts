import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/**
 * 0002_api_keys: API keys, sessions' keys and instances' keys (keys-tables.ts). Until issue 30, part of
 * 0001_foundation.
 */
export const apiKeysMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    await col
      .id(db.schema.createTable('api_keys'), dialect)
      .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('team_id', 'integer')
      .addColumn('name', 'text')
      .addColumn('key_hash', 'text', (c) => c.notNull().unique())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('permissions', 'text')
      .addColumn('instance_id', 'integer')
      .addColumn('is_bootstrap', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('created_at', col.time, (c) => c.notNull())
      .addColumn('last_used_at', col.time)
      .addColumn('revoked_at', col.time)
      .execute();
    await db.schema.createIndex('api_keys_user').on('api_keys').column('user_id').execute();
  },
});
