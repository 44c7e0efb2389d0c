import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/** 0005_machines (until issue 30, 0002_fleet): hosts, machines, GPUs and the fleet version (see fleet-tables.ts). */
export const machinesMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    await col
      .id(db.schema.createTable('fleet_hosts'), dialect)
      .addColumn('verification', 'text', (c) => c.notNull())
      .addColumn('created_at', col.time, (c) => c.notNull())
      .execute();

    await col
      .id(db.schema.createTable('fleet_machines'), dialect)
      .addColumn('host_id', 'integer', (c) => c.notNull().references('fleet_hosts.id').onDelete('cascade'))
      .addColumn('gpu_name', 'text', (c) => c.notNull())
      .addColumn('num_gpus', 'integer', (c) => c.notNull())
      .addColumn('price_gpu_micro', 'bigint', (c) => c.notNull())
      .addColumn('price_disk_micro', 'bigint', (c) => c.notNull())
      .addColumn('price_inetu_micro', 'bigint', (c) => c.notNull())
      .addColumn('price_inetd_micro', 'bigint', (c) => c.notNull())
      .addColumn('min_bid_micro', 'bigint', (c) => c.notNull())
      .addColumn('public_ipaddr', 'text', (c) => c.notNull())
      .addColumn('direct_port_start', 'integer', (c) => c.notNull())
      .addColumn('direct_port_count', 'integer', (c) => c.notNull())
      .addColumn('vms_enabled', 'integer', (c) => c.notNull())
      .addColumn('fault', 'text')
      .addColumn('end_date', col.time, (c) => c.notNull())
      .addColumn('spec', 'text', (c) => c.notNull())
      .addColumn('version', 'bigint', (c) => c.notNull())
      .addColumn('created_at', col.time, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('fleet_machines_version').on('fleet_machines').column('version').execute();
    await db.schema.createIndex('fleet_machines_host').on('fleet_machines').column('host_id').execute();

    await db.schema
      .createTable('fleet_gpus')
      .addColumn('machine_id', 'integer', (c) => c.notNull().references('fleet_machines.id').onDelete('cascade'))
      .addColumn('gpu_index', 'integer', (c) => c.notNull())
      .addColumn('instance_id', 'integer')
      .addColumn('hold_kind', 'text')
      .addColumn('bid_micro', 'bigint')
      .addPrimaryKeyConstraint('fleet_gpus_pk', ['machine_id', 'gpu_index'])
      .execute();
    await db.schema.createIndex('fleet_gpus_instance').on('fleet_gpus').column('instance_id').execute();

    await db.schema
      .createTable('fleet_state')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('version', 'bigint', (c) => c.notNull())
      .addColumn('epoch', 'text', (c) => c.notNull())
      .execute();
  },
});
