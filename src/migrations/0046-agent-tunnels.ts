import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/**
 * 0046_agent_tunnels: which server process holds each machine's agent tunnel, and where the other processes reach it
 * (its hop URL), so a stream opened on any process gets to the agent (tunnels-tables.ts, docs/AGENT-PROTOCOL.md "The
 * tunnel").
 */
export const agentTunnelsMigration: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('agent_tunnels')
      .addColumn('machine_id', 'integer', (c) => c.primaryKey())
      .addColumn('process_id', 'text', (c) => c.notNull())
      .addColumn('hop_url', 'text', (c) => c.notNull())
      .addColumn('connected_at', col.time, (c) => c.notNull())
      .execute();
  },
});
