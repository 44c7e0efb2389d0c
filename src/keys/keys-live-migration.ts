import { sql, type Kysely } from 'kysely';
import type { DialectMigration } from '../platform/db/migrations.js';

/**
 * 0034_keys_live: an index of the keys not revoked, by user. Every instance has a key, revoked when it is destroyed,
 * so a user's entries in the full index grow with every instance they ever ran, and revoking an instance's key (a
 * destroy) or listing the user's keys walked them all: 11% of a SQLite process's CPU after a minute of the mixed
 * load. Both databases choose the partial index when the query says `revoked_at IS NULL`.
 */
export const keysLiveMigration: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema.createIndex('api_keys_live_user').on('api_keys').column('user_id').where(sql.ref('revoked_at'), 'is', null).execute();
  },
});
