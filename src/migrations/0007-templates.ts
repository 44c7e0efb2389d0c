import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/** 0007_templates (until issue 30, 0003_templates): the templates table (spec: Template). */
export const templatesMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    const text = (c: any) => c.notNull().defaultTo('');
    const flag = (c: any) => c.notNull().defaultTo(0);
    await col
      .id(db.schema.createTable('templates'), dialect)
      .addColumn('hash_id', 'text', (c) => c.notNull().unique())
      .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('team_id', 'integer')
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('image', 'text', (c) => c.notNull())
      .addColumn('tag', 'text', text)
      .addColumn('default_tag', 'text', text)
      .addColumn('desc', 'text', text)
      .addColumn('readme', 'text', text)
      .addColumn('readme_visible', 'integer', (c) => c.notNull().defaultTo(1))
      .addColumn('env', 'text', text)
      .addColumn('onstart', 'text', text)
      .addColumn('runtype', 'text', text)
      .addColumn('args_str', 'text', text)
      .addColumn('ssh_direct', 'integer', flag)
      .addColumn('use_ssh', 'integer', flag)
      .addColumn('jup_direct', 'integer', flag)
      .addColumn('jupyter_dir', 'text')
      .addColumn('use_jupyter_lab', 'integer', flag)
      .addColumn('docker_login_repo', 'text', text)
      .addColumn('docker_login_user', 'text', text)
      .addColumn('docker_login_pass_sealed', 'text', text)
      .addColumn('href', 'text', text)
      .addColumn('repo', 'text', text)
      .addColumn('extra_filters', 'text', (c) => c.notNull().defaultTo('{}'))
      .addColumn('recommended_disk_space', col.time, (c) => c.notNull())
      .addColumn('private', 'integer', flag)
      .addColumn('volume_info', 'text')
      .addColumn('recommended', 'integer', flag)
      .addColumn('count_created', 'integer', flag)
      .addColumn('recent_create_date', col.time)
      .addColumn('created_at', col.time, (c) => c.notNull())
      .addColumn('version', 'integer', (c) => c.notNull().defaultTo(1))
      .execute();
    await db.schema.createIndex('templates_owner').on('templates').columns(['user_id', 'team_id']).execute();
  },
});
