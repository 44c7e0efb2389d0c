// Records what a release's migrations do: every statement each one runs on a new database, on SQLite and on
// PostgreSQL, written as JSON. test/migrations.test.ts replays such a record (test/fixtures/) to make a database as
// that release made it, and checks that the code of today opens it and migrates it to the schema of a new database.
// Run it on the release before a change that renames, splits or reorders migrations, from that release's own tree:
//
//   git archive <commit> src package.json tsconfig.json | tar -x -C /tmp/release && ln -s "$PWD/node_modules" /tmp/release/
//   GPUPLANE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test \
//     npx tsx scripts/record-migrations.ts /tmp/release/src/database.ts test/fixtures/migrations-<release>.json <commit>
//
// The module named must export that release's `MIGRATIONS` (src/database.ts until issue 30, src/migrations/index.ts
// since). The migrations run in the order of their names, one transaction each, as Kysely's migrator runs them.
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Kysely, PostgresDialect, SqliteDialect, type LogEvent } from 'kysely';
import SQLite from 'better-sqlite3';
import pg from 'pg';

type Dialect = 'sqlite' | 'postgres';
interface Statement { sql: string; parameters: readonly unknown[] }
interface Recorded { name: string; statements: Statement[] }
type Migration = (dialect: Dialect) => { up(db: Kysely<any>): Promise<void> };

const [modulePath, outPath, commit] = process.argv.slice(2);
const pgUrl = process.env.GPUPLANE_TEST_POSTGRES_URL;
if (!modulePath || !outPath || !commit || !pgUrl) {
  process.stderr.write('usage: GPUPLANE_TEST_POSTGRES_URL=… tsx scripts/record-migrations.ts <module exporting MIGRATIONS> <out.json> <commit>\n');
  process.exit(2);
}
const { MIGRATIONS } = (await import(pathToFileURL(resolve(modulePath)).href)) as { MIGRATIONS: { migrations: ReadonlyArray<readonly [string, Migration]> } };
const ordered = [...MIGRATIONS.migrations].sort(([a], [b]) => (a < b ? -1 : 1));

let current: Statement[] | undefined;
const log = (event: LogEvent) => {
  // The transaction's own begin and commit are the migrator's, not the migration's.
  if (event.level === 'query' && current && !/^(begin|commit)$/i.test(event.query.sql)) {
    current.push({ sql: event.query.sql, parameters: event.query.parameters });
  }
};

async function record(dialect: Dialect, db: Kysely<any>): Promise<Recorded[]> {
  const out: Recorded[] = [];
  for (const [name, migration] of ordered) {
    current = [];
    await db.transaction().execute((trx) => migration(dialect).up(trx));
    out.push({ name, statements: current });
    current = undefined;
  }
  return out;
}

const sqlite = new Kysely<any>({ dialect: new SqliteDialect({ database: new SQLite(':memory:') }), log });
const sqliteRecord = await record('sqlite', sqlite);
await sqlite.destroy();

const schema = `gpuplane_record_${process.pid}`;
const admin = new pg.Client({ connectionString: pgUrl });
await admin.connect();
await admin.query(`CREATE SCHEMA "${schema}"`);
const postgres = new Kysely<any>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: pgUrl, max: 1, options: `-c search_path="${schema}"` }) }), log });
try {
  const postgresRecord = await record('postgres', postgres);
  // One statement a line, so that a diff of two records reads as one.
  const migrations = (list: Recorded[]) =>
    list.map((m) => `  {"name": ${JSON.stringify(m.name)}, "statements": [\n${m.statements.map((s) => `   ${JSON.stringify(s)}`).join(',\n')}\n  ]}`).join(',\n');
  const text = `{\n "commit": ${JSON.stringify(commit)},\n "module": ${JSON.stringify(modulePath.replace(/^.*?(src\/)/, '$1'))},\n` +
    ` "sqlite": [\n${migrations(sqliteRecord)}\n ],\n "postgres": [\n${migrations(postgresRecord)}\n ]\n}`;
  JSON.parse(text);
  if (text.includes(schema)) throw new Error(`a statement names the schema ${schema}: the record would not replay elsewhere`);
  writeFileSync(outPath, `${text}\n`);
} finally {
  await postgres.destroy();
  await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
  await admin.end();
}
