import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/**
 * 0004_outbox: the emulator's outbox of emails and texts (emulator/emulator-tables.ts). Until issue 30, part of
 * 0001_foundation.
 */
export const outboxMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    await col
      .id(db.schema.createTable('outbox'), dialect)
      .addColumn('channel', 'text', (c) => c.notNull())
      .addColumn('to_addr', 'text', (c) => c.notNull())
      .addColumn('code', 'text')
      .addColumn('text', 'text', (c) => c.notNull())
      .addColumn('sent_at', col.time, (c) => c.notNull())
      .execute();
  },
});
