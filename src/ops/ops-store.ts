import { sql } from 'kysely';
import type { Tx } from '../platform/db/connect.js';

export function opsStore(db: Tx) {
  return {
    /** The cheapest statement that needs the database to answer. */
    async ping(): Promise<void> {
      await sql`select 1`.execute(db);
    },
  };
}
