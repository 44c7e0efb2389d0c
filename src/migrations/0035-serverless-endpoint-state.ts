import type { Kysely } from 'kysely';
import type { DialectMigration } from '../platform/db/migrations.js';

/**
 * 0035_serverless_endpoint_state (until issue 30, 0026_serverless_endpoint_state): an endpoint is `active` or `stopped`
 * (`vastai stop deployment` / `start deployment`, docs/spec/client-compat-more.md §e): a stopped endpoint's autoscaler
 * keeps no workers until it is started again.
 */
export const serverlessEndpointStateMigration: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable('serverless_endpoints').addColumn('endpoint_state', 'text', (c) => c.notNull().defaultTo('active')).execute();
  },
});
