import type { Kysely } from 'kysely';
import type { DialectMigration } from '../platform/db/migrations.js';

/**
 * 0025_instances_idempotency_sealed (until issue 30, 0019_instances_idempotency_sealed): idempotency records written
 * before instance keys were sealed (instances-create.ts, IdempotencyRecord) hold the key in clear: they are deleted.
 * The cost is small and bounded: a retry, within a day of the upgrade, of a create made before it rents again.
 */
export const instancesIdempotencySealedMigration: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.deleteFrom('instance_idempotency').where('reply', 'like', '%"instance_api_key":%').execute();
  },
});
