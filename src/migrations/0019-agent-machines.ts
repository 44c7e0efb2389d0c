import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/**
 * 0019_agent_machines (until issue 30, 0014_agent): machines run by `gpuplane agent`, and log requests waiting for
 * their agents (agent-tables.ts).
 */
export const agentMachinesMigration: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('agent_machines')
      .addColumn('machine_id', 'integer', (c) => c.primaryKey())
      .addColumn('user_id', 'integer', (c) => c.notNull())
      .addColumn('registration_id', 'text', (c) => c.notNull())
      .addColumn('key_hash', 'text')
      .addColumn('agent_version', 'text', (c) => c.notNull())
      .addColumn('hardware_declared', 'integer', (c) => c.notNull())
      .addColumn('hardware', 'text', (c) => c.notNull())
      .addColumn('last_report_at', col.time)
      .addColumn('offline', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('created_at', col.time, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('agent_machines_registration').unique().on('agent_machines').columns(['user_id', 'registration_id']).execute();
    await db.schema.createIndex('agent_machines_key').unique().on('agent_machines').column('key_hash').execute();
    await db.schema
      .createTable('agent_log_requests')
      .addColumn('request_id', 'text', (c) => c.primaryKey())
      .addColumn('machine_id', 'integer', (c) => c.notNull())
      .addColumn('instance_id', 'integer', (c) => c.notNull())
      .addColumn('log_request_id', 'integer', (c) => c.notNull())
      .addColumn('tail', 'integer')
      .addColumn('filter', 'text')
      .addColumn('text', 'text')
      .addColumn('error', 'text')
      .addColumn('answered_at', col.time)
      .addColumn('expires_at', col.time, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('agent_log_requests_machine').on('agent_log_requests').columns(['machine_id', 'answered_at']).execute();
    await db.schema.createIndex('agent_log_requests_log').on('agent_log_requests').column('log_request_id').execute();
  },
});
