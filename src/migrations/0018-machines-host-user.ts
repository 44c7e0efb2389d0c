import type { Kysely } from 'kysely';
import type { DialectMigration } from '../platform/db/migrations.js';

/**
 * 0018_machines_host_user (until issue 30, 0013_fleet_host_user): a host is a user. A user who registers a machine
 * (`gpuplane agent`) becomes a host: one `fleet_hosts` row per user, found by `user_id`. The simulated fleet's hosts
 * belong to no user (null).
 */
export const machinesHostUserMigration: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable('fleet_hosts').addColumn('user_id', 'integer').execute();
    await db.schema.createIndex('fleet_hosts_user').unique().on('fleet_hosts').column('user_id').execute();
  },
});
