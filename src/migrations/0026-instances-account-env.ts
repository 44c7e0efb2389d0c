import type { Kysely } from 'kysely';
import type { DialectMigration } from '../platform/db/migrations.js';

/**
 * 0026_instances_account_env (until issue 30, 0020_instances_account_env): the account environment variables
 * (`/api/v0/secrets/`) an instance was created with, sealed with the secret key. Kept apart from `env` (the instance's
 * own, shown as `extra_env`): these are secrets, and only the agent that runs the instance receives them.
 */
export const instancesAccountEnvMigration: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable('instances').addColumn('account_env_sealed', 'text').execute();
  },
});
