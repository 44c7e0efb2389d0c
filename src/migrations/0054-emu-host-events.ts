import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/**
 * 0054_emu_host_events (issue 34 item 3): the emulator's scripted host events on the service clock
 * (src/emulator/emu-events/events-tables.ts).
 */
export const emuHostEventsMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    await col.id(db.schema.createTable('emu_host_events'), dialect)
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('at', col.time, (c) => c.notNull())
      .addColumn('ends_at', col.time)
      .addColumn('machine_ids', 'text', (c) => c.notNull())
      .addColumn('params', 'text', (c) => c.notNull())
      .addColumn('seed', 'bigint', (c) => c.notNull())
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('instance_ids', 'text', (c) => c.notNull())
      .addColumn('created_at', col.time, (c) => c.notNull())
      .addColumn('started_at', col.time)
      .addColumn('ended_at', col.time)
      .execute();
  },
});
