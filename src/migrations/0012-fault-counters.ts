import type { Kysely } from 'kysely';
import type { DialectMigration } from '../platform/db/migrations.js';

/**
 * 0012_fault_counters: the emulator's counted faults (emulator/fault-counters-store.ts: how many more times a named fault
 * fires). Until issue 30, part of 0006_tfa.
 */
export const faultCountersMigration: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('emu_fault_counters')
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('remaining', 'integer', (c) => c.notNull())
      .execute();
  },
});
