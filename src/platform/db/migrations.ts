import { Migrator, sql, type CreateTableBuilder, type Kysely, type Migration, type MigrationProvider } from 'kysely';
/** The two databases gpuplane runs on. */
export type DialectName = 'sqlite' | 'postgres';

/** A migration that knows the dialect, so it can pick the id column type; the schema is otherwise identical. */
export type DialectMigration = (dialect: DialectName) => Migration;

/**
 * The database's migrations, as the composition root lists them (src/database.ts): by name, each name sorting
 * after the one before (the order they are applied in). Names are recorded in the database: never rename one.
 */
export interface MigrationList {
  migrations: ReadonlyArray<readonly [name: string, migration: DialectMigration]>;
  /**
   * The last of the migrations that were once listed out of order: databases made then may have applied them in
   * another order. A migration after it must sort after every migration a database has applied.
   */
  lastUnordered?: string;
}

export async function migrate(db: Kysely<any>, dialect: DialectName, list: MigrationList): Promise<void> {
  const names = list.migrations.map(([name]) => name);
  names.forEach((name, i) => {
    if (i > 0 && !(names[i - 1] < name)) throw new Error(`migrations out of order: ${name} is listed after ${names[i - 1]}`);
  });
  const provider: MigrationProvider = {
    getMigrations: async () => Object.fromEntries(list.migrations.map(([name, m]) => [name, m(dialect)])),
  };
  // Kysely's migrator takes a lock (a row lock on PostgreSQL), so several processes starting at once migrate once.
  // Its own order check compares the order migrations were applied in, and databases made while the list was out of
  // order applied the early ones in another order (each only creates its own feature's tables, so that was safe):
  // those are let through, and every later one is checked here instead.
  const migrator = new Migrator({
    db,
    provider,
    allowUnorderedMigrations: true,
    migrationTableSchema: dialect === 'postgres' ? await currentSchema(db) : undefined,
  });
  await ensureOrdered(migrator, list.lastUnordered);
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName;
    throw new Error(`database migration ${failed ?? ''} failed: ${(error as Error).message ?? error}`);
  }
}

/** A pending migration after `lastUnordered` must sort after every applied one: a new one always comes last. */
async function ensureOrdered(migrator: Migrator, lastUnordered: string | undefined): Promise<void> {
  const known = await migrator.getMigrations();
  const applied = known.filter((m) => m.executedAt !== undefined).map((m) => m.name);
  if (applied.length === 0) return;
  const newest = applied.reduce((a, b) => (a > b ? a : b));
  const early = known.find((m) => m.executedAt === undefined && m.name < newest && (lastUnordered === undefined || m.name > lastUnordered));
  if (early) throw new Error(`database migration ${early.name} sorts before ${newest}, which this database has already applied`);
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
