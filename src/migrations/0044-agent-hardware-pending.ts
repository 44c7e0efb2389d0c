import type { Kysely } from 'kysely';
import type { DialectMigration } from '../platform/db/migrations.js';

/**
 * 0044_agent_hardware_pending (until issue 30, 0048_agent_hardware_pending): a hardware report that arrived while the
 * machine had instances is recorded but not applied to what renters were shown (issue 29 item 20); 1 until the machine
 * is free and it is applied.
 */
export const agentHardwarePendingMigration: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable('agent_machines').addColumn('hardware_pending', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  },
});
