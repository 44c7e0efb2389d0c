import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/**
 * 0009_instances (until issue 30, 0005_instances): instances, their events, idempotency records, SSH keys and log
 * requests (instances-tables.ts).
 */
export const instancesMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    await col
      .id(db.schema.createTable('instances'), dialect)
      .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('team_id', 'integer')
      .addColumn('offer_id', 'integer', (c) => c.notNull())
      .addColumn('machine_id', 'integer')
      .addColumn('host_id', 'integer')
      .addColumn('num_gpus', 'integer', (c) => c.notNull())
      .addColumn('gpu_indexes', 'text', (c) => c.notNull().defaultTo('[]'))
      .addColumn('offer_snapshot', 'text', (c) => c.notNull().defaultTo('{}'))
      .addColumn('image', 'text', (c) => c.notNull())
      .addColumn('image_login_sealed', 'text')
      .addColumn('runtype', 'text', (c) => c.notNull())
      .addColumn('args_str', 'text')
      .addColumn('env', 'text', (c) => c.notNull().defaultTo('{}'))
      .addColumn('port_maps', 'text', (c) => c.notNull().defaultTo('[]'))
      .addColumn('hostname', 'text')
      .addColumn('onstart', 'text')
      .addColumn('label', 'text')
      .addColumn('disk', col.time, (c) => c.notNull())
      .addColumn('is_bid', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('bid_per_gpu_micro', 'bigint')
      .addColumn('gpu_rate_micro', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('disk_rate_micro', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('actual_status', 'text')
      .addColumn('intended_status', 'text', (c) => c.notNull())
      .addColumn('status_msg', 'text')
      .addColumn('ports', 'text')
      .addColumn('template_hash_id', 'text')
      .addColumn('template_id', 'integer')
      .addColumn('vm', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('jupyter_dir', 'text')
      .addColumn('use_jupyter_lab', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('options', 'text', (c) => c.notNull().defaultTo('{}'))
      .addColumn('volume_info', 'text')
      .addColumn('created_at', col.time, (c) => c.notNull())
      .addColumn('running_since', col.time)
      .addColumn('state_version', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('boot_step_at', col.time)
      .addColumn('boot_running_at', col.time)
      .addColumn('destroyed_at', col.time)
      .execute();
    await db.schema.createIndex('instances_user').on('instances').columns(['user_id', 'team_id']).execute();
    await db.schema.createIndex('instances_machine').on('instances').column('machine_id').execute();
    await db.schema.createIndex('instances_boot_step').on('instances').column('boot_step_at').execute();

    await col
      .id(db.schema.createTable('instance_events'), dialect)
      .addColumn('instance_id', 'integer', (c) => c.notNull())
      .addColumn('user_id', 'integer', (c) => c.notNull())
      .addColumn('team_id', 'integer')
      .addColumn('actual_status', 'text')
      .addColumn('intended_status', 'text', (c) => c.notNull())
      .addColumn('status_msg', 'text')
      .addColumn('at', col.time, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('instance_events_user').on('instance_events').columns(['user_id', 'id']).execute();
    await db.schema.createIndex('instance_events_instance').on('instance_events').columns(['instance_id', 'id']).execute();

    await col
      .id(db.schema.createTable('instance_idempotency'), dialect)
      .addColumn('user_id', 'integer', (c) => c.notNull())
      .addColumn('idem_key', 'text', (c) => c.notNull())
      .addColumn('request_hash', 'text', (c) => c.notNull())
      .addColumn('reply', 'text', (c) => c.notNull())
      .addColumn('created_at', col.time, (c) => c.notNull())
      .addUniqueConstraint('instance_idempotency_user_key', ['user_id', 'idem_key'])
      .execute();

    await col
      .id(db.schema.createTable('instance_ssh_keys'), dialect)
      .addColumn('instance_id', 'integer', (c) => c.notNull())
      .addColumn('ssh_key', 'text', (c) => c.notNull())
      .addColumn('created_at', col.time, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('instance_ssh_keys_instance').on('instance_ssh_keys').column('instance_id').execute();

    await col
      .id(db.schema.createTable('instance_log_requests'), dialect)
      .addColumn('instance_id', 'integer', (c) => c.notNull())
      .addColumn('token_hash', 'text', (c) => c.notNull().unique())
      .addColumn('tail', 'integer')
      .addColumn('filter', 'text')
      .addColumn('expires_at', col.time, (c) => c.notNull())
      .execute();
  },
});
