import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/** 0001_users: the accounts (users-tables.ts). Until issue 30, part of 0001_foundation. */
export const usersMigration: DialectMigration = (dialect) => ({
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
  },
});
