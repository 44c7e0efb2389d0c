import { sql, type Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/**
 * 0034_serverless_sdk (until issue 30, 0025_serverless_sdk): what the serverless SDK needs
 * (docs/spec/client-compat-more.md §e): each endpoint's own API key and its routed-request counter, deployments and
 * their versions, and the workergroup a deployment runs.
 */
export const serverlessSdkMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    const num = 'double precision';
    // One column per ALTER: SQLite adds one at a time.
    await db.schema.alterTable('serverless_endpoints').addColumn('api_key_hash', 'text').execute();
    await db.schema.alterTable('serverless_endpoints').addColumn('api_key_sealed', 'text').execute();
    await db.schema.alterTable('serverless_endpoints').addColumn('reqnum', 'integer', (c) => c.notNull().defaultTo(0)).execute();
    await db.schema.createIndex('serverless_endpoints_key').on('serverless_endpoints').column('api_key_hash').unique().execute();
    await db.schema.alterTable('serverless_workergroups').addColumn('deployment_id', 'integer').execute();
    await col
      .id(db.schema.createTable('serverless_deployments'), dialect)
      .addColumn('user_id', 'integer', (c) => c.notNull())
      .addColumn('team_id', 'integer')
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('tag', 'text', (c) => c.notNull())
      .addColumn('endpoint_id', 'integer', (c) => c.notNull().references('serverless_endpoints.id'))
      .addColumn('workergroup_id', 'integer', (c) => c.notNull().references('serverless_workergroups.id'))
      .addColumn('current_version_id', 'integer', (c) => c.notNull())
      .addColumn('last_healthy_version_id', 'integer')
      .addColumn('ttl', num)
      .addColumn('last_client_heartbeat', col.time)
      .addColumn('created_at', col.time, (c) => c.notNull())
      .addColumn('updated_at', col.time, (c) => c.notNull())
      .addColumn('deleted_at', col.time)
      .execute();
    // One live deployment per owner, name and tag (two PUTs creating it at once: the second is a 409). The owner is
    // the team for team rows (negated, so it never equals a user id) and the user otherwise, as scopes are.
    await sql`CREATE UNIQUE INDEX serverless_deployments_name ON serverless_deployments
      ((CASE WHEN team_id IS NULL THEN user_id ELSE -team_id END), name, tag) WHERE deleted_at IS NULL`.execute(db);
    await col
      .id(db.schema.createTable('serverless_deployment_versions'), dialect)
      .addColumn('deployment_id', 'integer', (c) => c.notNull().references('serverless_deployments.id'))
      .addColumn('version_label', 'text')
      .addColumn('file_hash', 'text', (c) => c.notNull())
      .addColumn('file_size', 'bigint', (c) => c.notNull())
      .addColumn('image', 'text', (c) => c.notNull())
      .addColumn('env', 'text')
      .addColumn('search_params', 'text')
      .addColumn('storage', num, (c) => c.notNull())
      .addColumn('image_login_sealed', 'text')
      .addColumn('s3_key', 'text', (c) => c.notNull())
      .addColumn('created_at', col.time, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('serverless_deployment_versions_deployment').on('serverless_deployment_versions').columns(['deployment_id', 'id']).execute();
  },
});
