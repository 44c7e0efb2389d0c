import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/** 0014_volumes (until issue 30, 0009_volumes): volumes and where they are mounted (volumes-tables.ts). */
export const volumesMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    await col
      .id(db.schema.createTable('volumes'), dialect)
      .addColumn('user_id', 'integer', (c) => c.notNull())
      .addColumn('team_id', 'integer')
      .addColumn('offer_id', 'bigint', (c) => c.notNull())
      .addColumn('machine_id', 'integer', (c) => c.notNull())
      .addColumn('host_id', 'integer', (c) => c.notNull())
      .addColumn('name', 'text')
      .addColumn('size_gb', 'double precision', (c) => c.notNull())
      .addColumn('price_disk_micro', 'bigint', (c) => c.notNull())
      .addColumn('rate_micro', 'bigint', (c) => c.notNull())
      .addColumn('created_at', col.time, (c) => c.notNull())
      .addColumn('deleted_at', col.time)
      .execute();
    await db.schema.createIndex('volumes_owner').on('volumes').columns(['user_id', 'team_id', 'deleted_at']).execute();
    // Space left on a machine sums its live volumes.
    await db.schema.createIndex('volumes_machine').on('volumes').columns(['machine_id', 'deleted_at']).execute();

    await db.schema
      .createTable('volume_mounts')
      .addColumn('volume_id', 'integer', (c) => c.notNull().references('volumes.id').onDelete('cascade'))
      .addColumn('instance_id', 'integer', (c) => c.notNull())
      .addColumn('mount_path', 'text', (c) => c.notNull())
      .addColumn('attached_at', col.time, (c) => c.notNull())
      .addPrimaryKeyConstraint('volume_mounts_pk', ['volume_id', 'instance_id'])
      .execute();
    await db.schema.createIndex('volume_mounts_instance').on('volume_mounts').column('instance_id').execute();
  },
  async down(db: Kysely<any>) {
    await db.schema.dropTable('volume_mounts').ifExists().execute();
    await db.schema.dropTable('volumes').ifExists().execute();
  },
});
