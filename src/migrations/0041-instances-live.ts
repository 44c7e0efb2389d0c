import { sql, type Kysely } from 'kysely';
import type { DialectMigration } from '../platform/db/migrations.js';

/**
 * 0041_instances_live (until issue 30, 0033_instances_live), SQLite: indexes of the instances not destroyed, by machine
 * and by owner. Destroyed instances stay as history, so the full indexes' entries for a machine or a user grow without
 * end, and every read of the live ones (a simulated agent's step, a rent's outbid check, `GET /instances`) walked them
 * all: under the mixed load one SQLite process fell from ~1,900 to ~1,250 req/s within a minute (`listOnMachines` 6% of
 * its CPU). SQLite takes a partial index over the full one when the query says `destroyed_at IS NULL`.
 *
 * PostgreSQL keeps the full indexes. There a destroy leaves the instance's entry in a partial index dead until a
 * vacuum (the row's new version falls outside it), so under the same load the partial indexes read more than the full
 * ones (listing a user's instances: 85 → 315 buffers), and a prepared statement's generic plan took the owner's
 * partial index over the primary key for `id = $1 AND user_id = $2` (18 → 309 µs).
 */
export const instancesLiveMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    if (dialect === 'postgres') return;
    const live = sql.ref('destroyed_at');
    await db.schema.createIndex('instances_live_machine').on('instances').column('machine_id').where(live, 'is', null).execute();
    await db.schema.createIndex('instances_live_user').on('instances').columns(['user_id', 'team_id']).where(live, 'is', null).execute();
    await db.schema.createIndex('instances_live_team').on('instances').column('team_id').where(live, 'is', null).execute();
  },
});
