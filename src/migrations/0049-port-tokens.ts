import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/**
 * 0049_port_tokens (issue 32, instance ports through the server): the per-port tokens (their SHA-256 only) and the
 * console's one-use grants (src/ports/ports-tables.ts).
 */
export const portTokensMigration: DialectMigration = () => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('port_tokens')
      .addColumn('instance_id', 'integer', (c) => c.notNull())
      .addColumn('port', 'integer', (c) => c.notNull())
      .addColumn('token_hash', 'text', (c) => c.notNull())
      .addColumn('user_id', 'integer', (c) => c.notNull())
      .addColumn('created_at', col.time, (c) => c.notNull())
      .addPrimaryKeyConstraint('port_tokens_pk', ['instance_id', 'port'])
      .execute();
    await db.schema
      .createTable('port_grants')
      .addColumn('grant_hash', 'text', (c) => c.primaryKey())
      .addColumn('instance_id', 'integer', (c) => c.notNull())
      .addColumn('port', 'integer', (c) => c.notNull())
      .addColumn('user_id', 'integer', (c) => c.notNull())
      .addColumn('expires_at', col.time, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('port_grants_expires').on('port_grants').column('expires_at').execute();
  },
});
