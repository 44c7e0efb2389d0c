import type { Kysely } from 'kysely';
import type { DialectMigration } from '../platform/db/migrations.js';

/**
 * 0048_instances_jupyter_token: the Jupyter token of an instance of a Jupyter runtype (issue 32), sealed
 * (platform/crypto.ts), as the instance key's sealed copy is (0045). Not a hash: the owner is shown it
 * (`jupyter_token`, `jupyter_url`) and the machine's agent puts it in the container as `JUPYTER_TOKEN`, so it must
 * open again; sealed, a copy of the database alone does not let anyone into a renter's Jupyter. Null for other
 * runtypes and for Jupyter instances made before it (their Jupyter makes a token of its own, printed in its log).
 */
export const instancesJupyterTokenMigration: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema.alterTable('instances').addColumn('jupyter_token_sealed', 'text').execute();
  },
});
