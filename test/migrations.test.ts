// Migrations (src/migrations/): one file each, numbered in order, each with one owner whose tables alone it changes;
// every name the release before issue 30 recorded is renamed to them, and they run that release's very statements
// (migrations-upgrade.test.ts opens databases of that release). The migration kit (platform/db/migrations.ts) refuses
// a list out of order, a renaming to a migration the list lacks and a new migration that sorts before one a database
// has applied.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { Kysely, SqliteDialect, sql } from 'kysely';
import SQLite from 'better-sqlite3';
import { MIGRATIONS, OWNED_MIGRATIONS } from '../src/migrations/index.js';
import { RENAMED } from '../src/migrations/renamed.js';
import type { DialectMigration, MigrationList } from '../src/platform/db/migrations.js';
import { DIALECTS } from './helpers/harness.js';
import { appliedMigrations, databasePlace, loadRelease, makeAsRelease } from './helpers/release-database.js';

const src = join(import.meta.dirname, '..', 'src');
/** The release before issue 30, as its migrations made databases. */
const RELEASE = loadRelease('migrations-before-issue-30.json');
const RELEASE_NAMES = RELEASE.sqlite.map((m) => m.name);
/** The order the list named the first twelve in until issue 12: databases of that time applied them so. */
const OLD_ORDER = [
  '0001_foundation', '0002_fleet', '0008_billing', '0003_templates', '0004_ssh_keys', '0005_instances', '0007_teams',
  '0006_tfa', '0009_volumes', '0010_serverless', '0011_fleet_heartbeat', '0012_billing_rates',
];
const NAMES = MIGRATIONS.migrations.map(([name]) => name);
const noop: DialectMigration = () => ({ async up() {} });

/** Table → the folder of src/ whose `*-tables.ts` declares it (the platform's in platform/db/schema.ts). */
function tableDeclarers(): Map<string, string> {
  const files = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => (statSync(join(dir, name)).isDirectory() ? files(join(dir, name)) : [join(dir, name)]));
  const declarers = new Map<string, string>();
  for (const file of files(src).filter((f) => f.endsWith('-tables.ts') || f.endsWith('platform/db/schema.ts'))) {
    for (const m of readFileSync(file, 'utf8').matchAll(/export interface \w*Tables\s*\{([^}]*)\}/g)) {
      for (const t of m[1].matchAll(/^\s*([a-z_][a-z0-9_]*)\s*:/gm)) declarers.set(t[1], relative(src, file).split('/')[0]);
    }
  }
  return declarers;
}

describe('migrations: the list', () => {
  test('one file per migration in src/migrations/, named as the migration, numbered from 0001 without a gap', () => {
    const files = readdirSync(join(src, 'migrations')).filter((f) => /^\d{4}-/.test(f)).sort();
    assert.deepEqual(files.map((f) => f.replace(/\.ts$/, '').replaceAll('-', '_')), NAMES);
    assert.deepEqual(NAMES.map((name) => Number(name.slice(0, 4))), NAMES.map((_, i) => i + 1));
  });

  test('each migration has one owner, a folder of src/', () => {
    for (const [name, owner] of OWNED_MIGRATIONS) {
      assert.ok(statSync(join(src, owner), { throwIfNoEntry: false })?.isDirectory(), `${name}: ${owner} is no folder of src/`);
    }
  });

  test('the renamed migrations run the very statements of the release before issue 30, in their new order (SQLite)', async () => {
    const ran: string[] = [];
    const db = new Kysely<any>({
      dialect: new SqliteDialect({ database: new SQLite(':memory:') }),
      log: (e) => void (e.level === 'query' && ran.push(JSON.stringify([e.query.sql, e.query.parameters]))),
    });
    try {
      const renamedTo = new Set(RENAMED.flatMap(([, now]) => now));
      for (const [name, , migration] of OWNED_MIGRATIONS) if (renamedTo.has(name)) await migration('sqlite').up(db);
    } finally {
      await db.destroy();
    }
    const released = RELEASE.sqlite.flatMap((m) => m.statements.map((st) => JSON.stringify([st.sql, st.parameters])));
    assert.deepEqual([...ran].sort(), [...released].sort());
  });

  test('each migration changes only tables its owner declares (SQLite: what each one adds, alters or drops)', async () => {
    const declarers = tableDeclarers();
    const db = new Kysely<any>({ dialect: new SqliteDialect({ database: new SQLite(':memory:') }) });
    try {
      const objects = async () =>
        new Map((await sql<{ name: string; tbl_name: string; sql: string | null }>`select name, tbl_name, sql from sqlite_master`.execute(db)).rows
          .map((o) => [o.name, o]));
      let before = await objects();
      for (const [name, owner, migration] of OWNED_MIGRATIONS) {
        await migration('sqlite').up(db);
        const after = await objects();
        const changed = new Set<string>();
        for (const [key, o] of after) if (before.get(key)?.sql !== o.sql) changed.add(o.tbl_name);
        for (const [key, o] of before) if (!after.has(key)) changed.add(o.tbl_name);
        changed.delete('sqlite_sequence');
        for (const table of changed) {
          const declarer = declarers.get(table);
          assert.equal(declarer, owner.split('/')[0], `${name} (owner ${owner}) changes ${table}, declared by ${declarer}`);
        }
        before = after;
      }
    } finally {
      await db.destroy();
    }
  });

  test('every name the release before issue 30 recorded is renamed, and its new names are the list, in order', () => {
    assert.deepEqual(RENAMED.map(([old]) => old).sort(), [...RELEASE_NAMES].sort());
    const renamedTo = RENAMED.flatMap(([, now]) => now);
    assert.deepEqual(renamedTo, NAMES.slice(0, renamedTo.length));
    // Old names in the order databases applied them: that of before issue 12 first.
    assert.deepEqual(RENAMED.slice(0, OLD_ORDER.length).map(([old]) => old), OLD_ORDER);
  });
});

for (const dialect of DIALECTS) {
  describe(`migrations: the kit [${dialect}]`, () => {
    test('a renaming to a migration the list lacks is refused before the database is touched', async () => {
      const p = databasePlace(dialect);
      try {
        await makeAsRelease(p, dialect, RELEASE, [['0001_foundation']]);
        const broken: MigrationList = { ...MIGRATIONS, renamed: [...RENAMED, ['0099_gone', ['0100_nowhere']]] };
        await assert.rejects(p.open(broken), /migration 0099_gone is renamed to 0100_nowhere, which the list does not have/);
        const db = await p.direct();
        try {
          assert.deepEqual((await appliedMigrations(db)).map((m) => m.name), ['0001_foundation']);
        } finally {
          await db.destroy();
        }
      } finally {
        await p.remove();
      }
    });

    test('a list out of order is refused before anything is applied', async () => {
      const p = databasePlace(dialect);
      try {
        const list: MigrationList = { migrations: [['0001_a', noop], ['0003_b', noop], ['0002_c', noop]] };
        await assert.rejects(p.open(list), /migrations out of order: 0002_c is listed after 0003_b/);
      } finally {
        await p.remove();
      }
    });

    test('a new migration that sorts before an applied one is refused', async () => {
      const p = databasePlace(dialect);
      try {
        await (await p.open({ migrations: [['0001_a', noop], ['9014_later', noop]] })).close();
        const late: MigrationList = { migrations: [['0001_a', noop], ['9013_late', noop], ['9014_later', noop]] };
        await assert.rejects(p.open(late), /expected previously executed migration 9014_later to be at index 1 but 9013_late was found in its place/);
        // One that sorts after every applied migration is applied.
        const store = await p.open({ migrations: [['0001_a', noop], ['9014_later', noop], ['9015_next', noop]] });
        try {
          assert.deepEqual((await appliedMigrations(store.db)).map((m) => m.name), ['0001_a', '9014_later', '9015_next']);
        } finally {
          await store.close();
        }
      } finally {
        await p.remove();
      }
    });
  });
}
