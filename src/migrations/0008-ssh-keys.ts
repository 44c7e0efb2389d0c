import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/** 0008_ssh_keys (until issue 30, 0004_ssh_keys): SSH public keys of an account (contract §3). */
export const sshKeysMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    await col
      .id(db.schema.createTable('ssh_keys'), dialect)
      .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('public_key', 'text', (c) => c.notNull())
      .addColumn('created_at', col.time, (c) => c.notNull())
      .addColumn('updated_at', col.time, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('ssh_keys_user').on('ssh_keys').column('user_id').execute();
  },
});
