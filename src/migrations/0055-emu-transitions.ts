import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/**
 * 0055_emu_transitions (issue 34 item 4): the emulator's transition rules (per resource kind or per instance) and the
 * slow-pull windows of its host events (emulator/emu-transitions/transitions-tables.ts).
 */
export const emuTransitionsMigration: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('emu_transitions')
      .addColumn('scope', 'text', (c) => c.primaryKey())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('instance_id', 'integer')
      .addColumn('mode', 'text', (c) => c.notNull())
      .addColumn('seconds', 'double precision')
      .addColumn('updated_at', col.time, (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('emu_slow_pulls')
      .addColumn('ref', 'text', (c) => c.notNull())
      .addColumn('machine_id', 'integer', (c) => c.notNull())
      .addColumn('pull_seconds', 'double precision', (c) => c.notNull())
      .addColumn('until', col.time)
      .addPrimaryKeyConstraint('emu_slow_pulls_pk', ['ref', 'machine_id'])
      .execute();
  },
});
