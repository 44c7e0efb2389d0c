import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/**
 * 0050_agent_gpu_health (issue 33): each agent machine's latest GPU sample (`gpu_telemetry`, JSON as the heartbeat
 * brought it) and the fault it stands under (`gpu_fault`, null when healthy), and the periods a machine was down
 * (silent, or a GPU fault) that reliability2 is measured from (agent-server-health.ts).
 */
export const agentGpuHealthMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable('agent_machines').addColumn('gpu_telemetry', 'text').execute();
    await db.schema.alterTable('agent_machines').addColumn('gpu_telemetry_at', col.time).execute();
    await db.schema.alterTable('agent_machines').addColumn('gpu_fault', 'text').execute();
    await col.id(db.schema.createTable('agent_health_periods'), dialect)
      .addColumn('machine_id', 'integer', (c) => c.notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('reason', 'text', (c) => c.notNull())
      .addColumn('started_at', col.time, (c) => c.notNull())
      .addColumn('ended_at', col.time)
      .execute();
    await db.schema.createIndex('agent_health_periods_machine').on('agent_health_periods').columns(['machine_id', 'started_at']).execute();
  },
});
