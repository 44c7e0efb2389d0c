/**
 * Databases as an earlier release made them, and what a database's schema is, for the migration tests
 * (migrations.test.ts, migrations-upgrade.test.ts).
 *
 * A release's database is replayed from a record of what its migrations did (scripts/record-migrations.ts, kept in
 * test/fixtures/): each migration's statements, run by Kysely's migrator as that release ran them (every migration
 * in a transaction, its name and time recorded in `kysely_migration`). Until issue 30 the migrator let a database
 * apply migrations in another order than their names' (`allowUnorderedMigrations`), and so does this.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CompiledQuery, Kysely, Migrator, SqliteDialect, sql, type Migration } from 'kysely';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { openDatabase } from '../../src/database.js';
import { openStore, type DialectName, type Store } from '../../src/platform/db/connect.js';
import type { MigrationList } from '../../src/platform/db/migrations.js';
import { SchemaScopedPostgresDialect } from '../../src/platform/db/pg-introspector.js';
import { PG_URL, dropSchema, uniqueSchema } from './harness.js';

interface RecordedMigration {
  name: string;
  statements: { sql: string; parameters: unknown[] }[];
}

/** What a release's migrations did, on each database. */
export interface ReleaseRecord {
  commit: string;
  sqlite: RecordedMigration[];
  postgres: RecordedMigration[];
}

export function loadRelease(file: string): ReleaseRecord {
  return JSON.parse(readFileSync(join(import.meta.dirname, '..', 'fixtures', file), 'utf8')) as ReleaseRecord;
}

/**
 * Applies the release's migrations named (those not yet applied), one migrator run: a start of that release.
 * `schema`: the PostgreSQL schema of Kysely's own tables (the release named it, as today's code does).
 */
export async function startRelease(db: Kysely<any>, dialect: DialectName, release: ReleaseRecord, names: string[], schema?: string): Promise<void> {
  const recorded = new Map(release[dialect].map((m) => [m.name, m.statements]));
  const migrations: Record<string, Migration> = {};
  for (const name of names) {
    const statements = recorded.get(name);
    if (!statements) throw new Error(`the release ${release.commit} has no migration ${name}`);
    migrations[name] = {
      async up(trx) {
        for (const s of statements) await trx.executeQuery(CompiledQuery.raw(s.sql, s.parameters));
      },
    };
  }
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations }, allowUnorderedMigrations: true, migrationTableSchema: schema });
  const { error } = await migrator.migrateToLatest();
  if (error) throw error;
}

/** A place for one database: opened by today's code (its list, or the one given), or reached directly. */
export interface DatabasePlace {
  /** PostgreSQL: the schema it lives in. */
  schema: string | undefined;
  open(list?: MigrationList): Promise<Store>;
  /** A connection of its own, without migrating, to make the database as a release did. */
  direct(): Promise<Kysely<any>>;
  remove(): Promise<void>;
}

export function databasePlace(dialect: DialectName): DatabasePlace {
  if (dialect === 'postgres') {
    const schema = uniqueSchema();
    return {
      schema,
      open: (list) => (list ? openStore(PG_URL!, { pgSchema: schema, pgPoolSize: 2, migrations: list }) : openDatabase(PG_URL!, { pgSchema: schema, pgPoolSize: 2 })),
      async direct() {
        const admin = new pg.Client({ connectionString: PG_URL });
        await admin.connect();
        await admin.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
        await admin.end();
        // Scoped to its schema as the app's is (pg-introspector.ts): the migrator's introspection of every schema
        // fails when another test drops its own meanwhile.
        const pool = new pg.Pool({ connectionString: PG_URL, max: 1, options: `-c search_path="${schema}"` });
        return new Kysely<any>({ dialect: new SchemaScopedPostgresDialect({ pool }) });
      },
      remove: () => dropSchema(schema),
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'gpuplane-migrations-'));
  const file = join(dir, 'gpuplane.db');
  return {
    schema: undefined,
    open: (list) => (list ? openStore(`sqlite:${file}`, { migrations: list }) : openDatabase(`sqlite:${file}`)),
    direct: async () => new Kysely<any>({ dialect: new SqliteDialect({ database: new SQLite(file) }) }),
    remove: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Makes the place's database as the release did: each start applying the migrations named not yet applied. */
export async function makeAsRelease(p: DatabasePlace, dialect: DialectName, release: ReleaseRecord, starts: string[][]): Promise<void> {
  const db = await p.direct();
  try {
    for (const names of starts) await startRelease(db, dialect, release, names, p.schema);
  } finally {
    await db.destroy();
  }
}

/** The recorded migrations: name and time, in the order applied. */
export async function appliedMigrations(db: Kysely<any>): Promise<{ name: string; timestamp: string }[]> {
  const rows = await db.selectFrom('kysely_migration').select(['name', 'timestamp']).execute();
  return rows.sort((a, b) => Date.parse(a.timestamp) - Date.parse(b.timestamp) || (a.name < b.name ? -1 : 1));
}

/**
 * A database's schema, to compare two: every table with its columns, every index, constraint and trigger, and on
 * PostgreSQL the functions and sequences, each as the database describes it (SQLite: its `CREATE` text). Names of the
 * PostgreSQL schema are written `<schema>`, so two schemas of one database compare.
 */
export async function schemaOf(db: Kysely<any>, dialect: DialectName): Promise<Record<string, unknown>> {
  return dialect === 'sqlite' ? sqliteSchema(db) : postgresSchema(db);
}

async function sqliteSchema(db: Kysely<any>): Promise<Record<string, unknown>> {
  const rows = async (query: ReturnType<typeof sql>) => (await query.execute(db)).rows as Record<string, unknown>[];
  const objects = await rows(sql`select type, name, tbl_name, sql from sqlite_master where name not like 'sqlite_%' order by type, name`);
  const tables = objects.filter((o) => o.type === 'table').map((o) => String(o.name));
  const shape: Record<string, unknown> = { objects };
  for (const table of tables) {
    shape[`columns of ${table}`] = await rows(sql`select name, type, "notnull", dflt_value, pk from pragma_table_info(${table}) order by cid`);
    shape[`indexes of ${table}`] = await rows(sql`select name, "unique", origin, partial from pragma_index_list(${table}) order by name`);
    shape[`foreign keys of ${table}`] = await rows(sql`select "table", "from", "to", on_delete from pragma_foreign_key_list(${table}) order by id, seq`);
  }
  return shape;
}

async function postgresSchema(db: Kysely<any>): Promise<Record<string, unknown>> {
  const schema = String((await sql<{ s: string }>`select current_schema() as s`.execute(db)).rows[0].s);
  const rows = async (query: ReturnType<typeof sql>) =>
    JSON.parse(JSON.stringify((await query.execute(db)).rows).replaceAll(`${schema}.`, '<schema>.')) as Record<string, unknown>[];
  return {
    columns: await rows(sql`select table_name, ordinal_position, column_name, data_type, is_nullable, column_default
      from information_schema.columns where table_schema = ${schema} order by table_name, ordinal_position`),
    indexes: await rows(sql`select tablename, indexname, indexdef from pg_indexes where schemaname = ${schema} order by tablename, indexname`),
    constraints: await rows(sql`select c.relname, k.conname, k.contype, pg_get_constraintdef(k.oid) as def
      from pg_constraint k join pg_class c on c.oid = k.conrelid join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = ${schema} order by c.relname, k.conname`),
    triggers: await rows(sql`select c.relname, t.tgname, pg_get_triggerdef(t.oid) as def
      from pg_trigger t join pg_class c on c.oid = t.tgrelid join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = ${schema} and not t.tgisinternal order by c.relname, t.tgname`),
    functions: await rows(sql`select p.proname, pg_get_functiondef(p.oid) as def
      from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = ${schema} order by p.proname`),
    sequences: await rows(sql`select sequence_name, data_type from information_schema.sequences where sequence_schema = ${schema} order by sequence_name`),
  };
}
