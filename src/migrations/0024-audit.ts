import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/** 0024_audit (until issue 30, 0018_audit): the audit log and the users' client addresses (audit-tables.ts). */
export const auditMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    await col
      .id(db.schema.createTable('audit_logs'), dialect)
      .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('team_id', 'integer')
      .addColumn('api_key_id', 'integer')
      .addColumn('action', 'text', (c) => c.notNull())
      .addColumn('api_route', 'text', (c) => c.notNull())
      .addColumn('ip_address', 'text', (c) => c.notNull())
      .addColumn('args', 'text', (c) => c.notNull())
      .addColumn('created_at', col.time, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('audit_logs_user').on('audit_logs').columns(['user_id', 'created_at']).execute();
    await db.schema.createIndex('audit_logs_team').on('audit_logs').columns(['team_id', 'created_at']).execute();
    await db.schema.createIndex('audit_logs_time').on('audit_logs').column('created_at').execute();
    await db.schema
      .createTable('user_ipaddrs')
      .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('ip', 'text', (c) => c.notNull())
      .addColumn('first_seen', col.time, (c) => c.notNull())
      .addPrimaryKeyConstraint('user_ipaddrs_pk', ['user_id', 'ip'])
      .execute();
  },
});
