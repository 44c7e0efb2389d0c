import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/**
 * 0011_tfa: two-factor methods, backup codes, challenges, each account's 2FA state and the SMS sends (tfa-tables.ts).
 * Until issue 30, 0006_tfa, which also made the emulator's fault counters (now 0012) and login's sessions (0013).
 */
export const tfaMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    const userRef = (c: any) => c.notNull().references('users.id').onDelete('cascade');
    await col
      .id(db.schema.createTable('tfa_methods'), dialect)
      .addColumn('user_id', 'integer', userRef)
      .addColumn('method', 'text', (c) => c.notNull())
      .addColumn('label', 'text', (c) => c.notNull())
      .addColumn('phone_number', 'text')
      .addColumn('totp_secret', 'text')
      .addColumn('is_primary', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('fail_count', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('locked_until', col.time)
      .addColumn('last_totp_step', 'bigint')
      .addColumn('created_at', col.time, (c) => c.notNull())
      .addColumn('last_used', col.time)
      .execute();
    await db.schema.createIndex('tfa_methods_user').on('tfa_methods').column('user_id').execute();

    await col
      .id(db.schema.createTable('tfa_backup_codes'), dialect)
      .addColumn('user_id', 'integer', userRef)
      .addColumn('code_hash', 'text', (c) => c.notNull())
      .addColumn('created_at', col.time, (c) => c.notNull())
      .addColumn('used_at', col.time)
      .addColumn('deleted_at', col.time)
      .execute();
    await db.schema.createIndex('tfa_backup_codes_user').on('tfa_backup_codes').columns(['user_id', 'code_hash']).execute();

    await col
      .id(db.schema.createTable('tfa_challenges'), dialect)
      .addColumn('user_id', 'integer', userRef)
      .addColumn('secret_hash', 'text', (c) => c.notNull().unique())
      .addColumn('purpose', 'text', (c) => c.notNull())
      .addColumn('channel', 'text')
      .addColumn('code_hash', 'text')
      .addColumn('phone_number', 'text')
      .addColumn('method_id', 'integer')
      .addColumn('client', 'text')
      .addColumn('fail_count', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('last_sent_at', col.time)
      .addColumn('code_expires_at', col.time)
      .addColumn('expires_at', col.time, (c) => c.notNull())
      .addColumn('consumed_at', col.time)
      .addColumn('created_at', col.time, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('tfa_challenges_user').on('tfa_challenges').columns(['user_id', 'purpose']).execute();

    await db.schema
      .createTable('tfa_accounts')
      .addColumn('user_id', 'integer', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
      .addColumn('new_method_until', col.time)
      .addColumn('sms_fraud_at', col.time)
      .addColumn('login_fail_count', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('login_locked_until', col.time)
      .execute();

    await col
      .id(db.schema.createTable('sms_sends'), dialect)
      .addColumn('user_id', 'integer', userRef)
      .addColumn('phone_number', 'text', (c) => c.notNull())
      .addColumn('preauth', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('sent_at', col.time, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('sms_sends_number').on('sms_sends').columns(['phone_number', 'sent_at']).execute();
    await db.schema.createIndex('sms_sends_user').on('sms_sends').columns(['user_id', 'sent_at']).execute();
  },
});
