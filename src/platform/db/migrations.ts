import { Migrator, sql, type CreateTableBuilder, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import type { DialectName } from './connect.js';
import { foundationMigration } from './migration-0001-foundation.js';
import { billingMigration } from '../../billing/billing-migration.js';
import { templatesMigration } from '../../templates/templates-migration.js';
import { sshKeysMigration } from '../../ssh-keys/ssh-keys-migration.js';
import { instancesMigration } from '../../instances/instances-migration.js';
import { teamsMigration } from '../../teams/teams-migration.js';
import { fleetMigration } from '../../fleet/fleet-migration.js';
import { tfaMigration } from '../../tfa/tfa-migration.js';
import { volumesMigration } from '../../volumes/volumes-migration.js';
import { serverlessMigration } from '../../serverless/serverless-migration.js';
import { fleetHeartbeatMigration } from '../../fleet/fleet-heartbeat-migration.js';
import { billingRatesMigration } from '../../billing/billing-rates-migration.js';
import { fleetHostUserMigration } from '../../fleet/fleet-host-user-migration.js';
import { hostingMigration } from '../../hosting/hosting-migration.js';

/** A migration that knows the dialect, so it can pick the id column type; the schema is otherwise identical. */
export type DialectMigration = (dialect: DialectName) => Migration;

/** In order. Features append theirs; names sort in application order. */
const MIGRATIONS: Record<string, DialectMigration> = {
  '0001_foundation': foundationMigration,
  '0002_fleet': fleetMigration,
  '0008_billing': billingMigration,
  '0003_templates': templatesMigration,
  '0004_ssh_keys': sshKeysMigration,
  '0005_instances': instancesMigration,
  '0007_teams': teamsMigration,
  '0006_tfa': tfaMigration,
  '0009_volumes': volumesMigration,
  '0010_serverless': serverlessMigration,
  '0011_fleet_heartbeat': fleetHeartbeatMigration,
  '0012_billing_rates': billingRatesMigration,
  '0013_fleet_host_user': fleetHostUserMigration,
  '0015_hosting': hostingMigration,
};

export async function migrate(db: Kysely<any>, dialect: DialectName): Promise<void> {
  const provider: MigrationProvider = {
    getMigrations: async () =>
      Object.fromEntries(Object.entries(MIGRATIONS).map(([name, m]) => [name, m(dialect)])),
  };
  // Kysely's migrator takes a lock (a row lock on PostgreSQL), so several processes starting at once migrate once.
  // Features land their numbered migrations in any order, so a database may already hold a later number when an
  // earlier one arrives; each migration only creates its own feature's tables, so applying it late is safe.
  const { error, results } = await new Migrator({
    db,
    provider,
    allowUnorderedMigrations: true,
    migrationTableSchema: dialect === 'postgres' ? await currentSchema(db) : undefined,
  }).migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName;
    throw new Error(`database migration ${failed ?? ''} failed: ${(error as Error).message ?? error}`);
  }
}

/**
 * The schema this connection works in (its search_path). Named to Kysely's migrator because, unnamed, it looks for
 * its own tables in every schema of the database: with several gpuplane databases in one PostgreSQL (one schema
 * each), it would find another one's and skip creating its own.
 */
async function currentSchema(db: Kysely<any>): Promise<string> {
  const { rows } = await sql<{ schema: string | null }>`select current_schema() as schema`.execute(db);
  const schema = rows[0]?.schema;
  if (!schema) throw new Error('PostgreSQL: no schema of the search_path exists; create it first');
  return schema;
}

/** Column helpers: the only place where the two dialects differ. */
export const col = {
  /** Adds the `id` primary key: `serial` on PostgreSQL, `integer … autoincrement` on SQLite (ids never reused). */
  id<T extends CreateTableBuilder<any, any>>(table: T, dialect: DialectName): T {
    return (
      dialect === 'postgres'
        ? table.addColumn('id', 'serial', (c) => c.primaryKey())
        : table.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
    ) as T;
  },
  time: sql`double precision`,
};
