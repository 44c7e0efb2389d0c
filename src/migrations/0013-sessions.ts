import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/**
 * 0013_sessions: login sessions (login/sessions.ts): an `api_keys` row of kind `session` and when it expires.
 * Until issue 30, part of 0006_tfa.
 */
export const sessionsMigration: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('sessions')
      .addColumn('key_id', 'integer', (c) => c.primaryKey().references('api_keys.id').onDelete('cascade'))
      .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('client', 'text', (c) => c.notNull())
      .addColumn('created_at', col.time, (c) => c.notNull())
      .addColumn('expires_at', col.time, (c) => c.notNull())
      .execute();
  },
});
