import { sql, type Kysely } from 'kysely';
import type { DialectMigration } from '../platform/db/migrations.js';

/**
 * 0042_api_keys_live (until issue 30, 0034_keys_live): revoking an instance's keys (every destroy) no longer walks the
 * user's every key. Each instance has a key, revoked when it is destroyed and kept, so a user's entries in the index by
 * user grow with every instance they ever ran: 11% of a SQLite process's CPU after a minute of the mixed load.
 * - SQLite: an index of the keys not revoked, by user (it takes a partial index when the query says
 *   `revoked_at IS NULL`); listing a user's keys uses it too.
 * - PostgreSQL: an index by instance. A partial index there keeps a revoked key's entry, dead, until a vacuum
 *   (0041_instances_live); an instance's keys are one or two, and revoking them does not change the indexed column.
 */
export const apiKeysLiveMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    if (dialect === 'postgres') {
      await db.schema.createIndex('api_keys_instance').on('api_keys').column('instance_id').execute();
      return;
    }
    await db.schema.createIndex('api_keys_live_user').on('api_keys').column('user_id').where(sql.ref('revoked_at'), 'is', null).execute();
  },
});
