import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/** 0030_clusters: clusters and their machines (clusters-tables.ts). Until issue 30, part of 0022_prepay_benchmarks. */
export const clustersMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    await col
      .id(db.schema.createTable('clusters'), dialect)
      .addColumn('user_id', 'integer', (c) => c.notNull())
      .addColumn('subnet', 'text', (c) => c.notNull())
      .addColumn('created_at', col.time, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('clusters_user').on('clusters').column('user_id').execute();
    await db.schema
      .createTable('cluster_nodes')
      .addColumn('machine_id', 'integer', (c) => c.primaryKey())
      .addColumn('cluster_id', 'integer', (c) => c.notNull().references('clusters.id').onDelete('cascade'))
      .addColumn('is_manager', 'integer', (c) => c.notNull())
      .addColumn('joined_at', col.time, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('cluster_nodes_cluster').on('cluster_nodes').column('cluster_id').execute();
  },
});
