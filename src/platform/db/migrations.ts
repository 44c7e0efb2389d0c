import { Migrator, sql, type CreateTableBuilder, type Kysely, type Migration, type MigrationProvider } from 'kysely';
/** The two databases gpuplane runs on. */
export type DialectName = 'sqlite' | 'postgres';

/** A migration that knows the dialect, so it can pick the id column type; the schema is otherwise identical. */
export type DialectMigration = (dialect: DialectName) => Migration;

/**
 * The database's migrations, as src/migrations/index.ts lists them: by name, each name sorting after the one before
 * (the order they are applied in). Names are recorded in the database: a name changes only through `renamed`.
 */
export interface MigrationList {
  migrations: ReadonlyArray<readonly [name: string, migration: DialectMigration]>;
  /**
   * Names a database may have recorded that are no longer in the list, each with the migrations it became (in
   * order): a database that applied the old one has applied those. Applied to the recorded names before anything
   * else, in one transaction.
   */
  renamed?: ReadonlyArray<readonly [old: string, now: readonly string[]]>;
}

export async function migrate(db: Kysely<any>, dialect: DialectName, list: MigrationList): Promise<void> {
  const names = list.migrations.map(([name]) => name);
  names.forEach((name, i) => {
    if (i > 0 && !(names[i - 1] < name)) throw new Error(`migrations out of order: ${name} is listed after ${names[i - 1]}`);
  });
  checkRenames(new Set(names), list.renamed ?? []);
  const schema = dialect === 'postgres' ? await currentSchema(db) : undefined;
  await rename(db, schema, list.renamed ?? []);
  const provider: MigrationProvider = {
    getMigrations: async () => Object.fromEntries(list.migrations.map(([name, m]) => [name, m(dialect)])),
  };
  // Kysely's migrator takes a lock (an advisory lock on PostgreSQL), so several processes starting at once migrate
  // once. It refuses a database whose applied migrations are not the first of the list, in the order applied: a new
  // migration always sorts after every one before it.
  const migrator = new Migrator({ db, provider, migrationTableSchema: schema });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName;
    throw new Error(`database migration ${failed ?? ''} failed: ${(error as Error).message ?? error}`);
  }
}

/** A renamed migration's new names are in the list, and its old name is not (it would be renamed again each time). */
function checkRenames(names: Set<string>, renamed: NonNullable<MigrationList['renamed']>): void {
  for (const [old, now] of renamed) {
    if (names.has(old)) throw new Error(`migration ${old} is renamed, and a migration of the list has its old name`);
    const missing = now.find((name) => !names.has(name));
    if (missing !== undefined) throw new Error(`migration ${old} is renamed to ${missing}, which the list does not have`);
  }
}

/**
 * Replaces the recorded names of renamed migrations with their new ones, in one transaction. The old rows are deleted
 * first: the delete takes the database's write lock (SQLite) or the rows' locks (PostgreSQL), so of several processes
 * opening one database at once one renames, and the others then find nothing left to rename.
 *
 * Kysely orders the applied migrations by the time recorded, then by name. The old rows hold the order each
 * database applied them in, which is not always the list's (until issue 12 the list named 0008_billing before
 * 0003_templates, and databases of that time applied them so): the new rows all take the latest of their times, so
 * that they follow each other by name.
 */
async function rename(db: Kysely<any>, schema: string | undefined, renamed: NonNullable<MigrationList['renamed']>): Promise<void> {
  if (renamed.length === 0 || !(await hasMigrationTable(db, schema))) return;
  const table = (trx: Kysely<any>) => (schema ? trx.withSchema(schema) : trx);
  const news = new Map(renamed);
  await db.transaction().execute(async (trx) => {
    const old = await table(trx)
      .deleteFrom('kysely_migration')
      .where('name', 'in', [...news.keys()])
      .returning(['name', 'timestamp'])
      .execute();
    if (old.length === 0) return;
    const latest = old.map((row) => row.timestamp as string).reduce((a, b) => (Date.parse(a) >= Date.parse(b) ? a : b));
    const rows = old.flatMap((row) => news.get(row.name)!.map((name) => ({ name, timestamp: latest })));
    await table(trx).insertInto('kysely_migration').values(rows).execute();
  });
}

/** Whether Kysely's table of applied migrations is there (a new database has none until the migrator runs). */
async function hasMigrationTable(db: Kysely<any>, schema: string | undefined): Promise<boolean> {
  const { rows } = schema
    ? await sql`select 1 from pg_catalog.pg_tables where schemaname = ${schema} and tablename = 'kysely_migration'`.execute(db)
    : await sql`select 1 from sqlite_master where type = 'table' and name = 'kysely_migration'`.execute(db);
  return rows.length > 0;
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
