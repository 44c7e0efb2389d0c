import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/** 0029_benchmarks: the benchmarks table (benchmarks-tables.ts). Until issue 30, part of 0022_prepay_benchmarks. */
export const benchmarksMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    await col
      .id(db.schema.createTable('benchmarks'), dialect)
      .addColumn('machine_id', 'integer', (c) => c.notNull())
      .addColumn('gpu_name', 'text', (c) => c.notNull())
      .addColumn('num_gpus', 'integer', (c) => c.notNull())
      .addColumn('value', col.time, (c) => c.notNull())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('template_hash', 'text')
      .addColumn('template_id', 'integer')
      .addColumn('contract_id', 'integer')
      .addColumn('image', 'text')
      .addColumn('launch_args', 'text')
      .addColumn('last_update', col.time, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('benchmarks_gpu').on('benchmarks').columns(['gpu_name', 'num_gpus', 'last_update']).execute();
  },
});
