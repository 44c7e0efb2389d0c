import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/**
 * 0027_instances_extras (until issue 30, 0021_instances_extras): reboot, recycle, update, execute and snapshots
 * (docs/spec/client-compat-more.md §c).
 * - `instances.generation`: bumped when the container must be made anew (recycle, update); a real host's agent
 *   recreates a container labelled with an older one. `instances.repull`: 1 when that generation's image is pulled
 *   afresh even if the host has it (recycle).
 * - `instance_commands`: `execute` requests, their output (until fetched once from `result_url`) and its token's hash.
 * - `instance_snapshots`: `take snapshot` requests: the registry login sealed until the host answers, then the outcome.
 */
export const instancesExtrasMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable('instances').addColumn('generation', 'integer', (c) => c.notNull().defaultTo(1)).execute();
    await db.schema.alterTable('instances').addColumn('repull', 'integer', (c) => c.notNull().defaultTo(0)).execute();
    await col
      .id(db.schema.createTable('instance_commands'), dialect)
      .addColumn('instance_id', 'integer', (c) => c.notNull())
      .addColumn('machine_id', 'integer', (c) => c.notNull())
      .addColumn('request_id', 'text', (c) => c.notNull().unique())
      .addColumn('token_hash', 'text', (c) => c.notNull().unique())
      .addColumn('argv', 'text', (c) => c.notNull())
      .addColumn('output', 'text')
      .addColumn('answered_at', col.time)
      .addColumn('fetched_at', col.time)
      .addColumn('created_at', col.time, (c) => c.notNull())
      .addColumn('expires_at', col.time, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('instance_commands_machine').on('instance_commands').columns(['machine_id', 'answered_at']).execute();
    await col
      .id(db.schema.createTable('instance_snapshots'), dialect)
      .addColumn('instance_id', 'integer', (c) => c.notNull())
      .addColumn('machine_id', 'integer', (c) => c.notNull())
      .addColumn('request_id', 'text', (c) => c.notNull().unique())
      .addColumn('image', 'text', (c) => c.notNull())
      .addColumn('login_sealed', 'text')
      .addColumn('pause', 'integer', (c) => c.notNull())
      .addColumn('error', 'text')
      .addColumn('answered_at', col.time)
      .addColumn('created_at', col.time, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('instance_snapshots_machine').on('instance_snapshots').columns(['machine_id', 'answered_at']).execute();
    await db.schema.createIndex('instance_snapshots_instance').on('instance_snapshots').column('instance_id').execute();
  },
});
