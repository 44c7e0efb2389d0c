import type { Kysely } from 'kysely';
import type { DialectMigration } from '../platform/db/migrations.js';

/**
 * 0045_instances_api_key_sealed: the instance key, sealed (platform/crypto.ts), so that the machine's agent can put it
 * in the container as `CONTAINER_API_KEY` (api-spec: "injected into the container"). The key itself is stored as a
 * hash only (api_keys); this sealed copy goes nowhere but into the desired state of the instance's own machine.
 * Instances made before it have none, and their containers get none.
 */
export const instancesApiKeySealedMigration: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable('instances').addColumn('api_key_sealed', 'text').execute();
  },
});
