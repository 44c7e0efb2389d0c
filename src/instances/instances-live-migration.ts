import { sql, type Kysely } from 'kysely';
import type { DialectMigration } from '../platform/db/migrations.js';

/**
 * 0033_instances_live: indexes of the instances not destroyed, by machine and by owner. Destroyed instances stay as
 * history, so the full indexes' entries for a machine or a user grow without end, and every read of the live ones
 * (a simulated agent's step, a rent's outbid check, `GET /instances`) walked them all: under the mixed load one
 * SQLite process fell from ~1,900 to ~1,000 req/s within a minute (bench zz profile: `listOnMachines` 6% of its CPU).
 * Both databases choose a partial index over the full one when the query says `destroyed_at IS NULL`.
 */
export const instancesLiveMigration: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema.createIndex('instances_live_machine').on('instances').column('machine_id').where(sql.ref('destroyed_at'), 'is', null).execute();
    await db.schema.createIndex('instances_live_user').on('instances').columns(['user_id', 'team_id']).where(sql.ref('destroyed_at'), 'is', null).execute();
    await db.schema.createIndex('instances_live_team').on('instances').column('team_id').where(sql.ref('destroyed_at'), 'is', null).execute();
  },
});
