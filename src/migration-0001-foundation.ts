import type { Kysely } from 'kysely';
import { col, type DialectMigration } from './platform/db/migrations.js';

/** The first migration: users, API keys, the scheduler's jobs, the emulator's outbox, the kv state. */
export const foundationMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    await col
      .id(db.schema.createTable('users'), dialect)
      .addColumn('email', 'text', (c) => c.notNull().unique())
      .addColumn('full_name', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('password_hash', 'text')
      .addColumn('credit_micro', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('ssh_key', 'text')
      .addColumn('is_admin', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('email_verified_at', col.time)
      .addColumn('tfa_status', 'text', (c) => c.notNull().defaultTo('disabled'))
      .addColumn('phone_number', 'text')
      .addColumn('created_at', col.time, (c) => c.notNull())
      .execute();

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

    await col
      .id(db.schema.createTable('jobs'), dialect)
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('due_at', col.time, (c) => c.notNull())
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('ref', 'text')
      .execute();
    await db.schema.createIndex('jobs_due').on('jobs').columns(['due_at', 'id']).execute();
    await db.schema.createIndex('jobs_ref').on('jobs').column('ref').execute();

    await col
      .id(db.schema.createTable('outbox'), dialect)
      .addColumn('channel', 'text', (c) => c.notNull())
      .addColumn('to_addr', 'text', (c) => c.notNull())
      .addColumn('code', 'text')
      .addColumn('text', 'text', (c) => c.notNull())
      .addColumn('sent_at', col.time, (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('kv')
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('value', 'text', (c) => c.notNull())
      .execute();
  },
});
