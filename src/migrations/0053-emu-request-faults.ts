import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/**
 * 0053_emu_request_faults (issue 34 item 3): the emulator's faults by API operation, each rule with its counters
 * (emulator/emu-request-faults/request-faults-tables.ts).
 */
export const emuRequestFaultsMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    await col
      .id(db.schema.createTable('emu_request_faults'), dialect)
      .addColumn('method', 'text', (c) => c.notNull())
      .addColumn('route', 'text')
      .addColumn('category', 'text')
      .addColumn('probability', 'double precision', (c) => c.notNull())
      .addColumn('status', 'integer')
      .addColumn('retry_after', 'integer')
      .addColumn('latency_ms', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('timeout', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('max_count', 'integer')
      .addColumn('seed', 'bigint')
      .addColumn('matched', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('fired', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('created_at', col.time, (c) => c.notNull())
      .execute();
  },
});
