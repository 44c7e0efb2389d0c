// Migrations: the composition root's ordered list (src/database.ts) opens databases made while the list was out of
// order (features landed their numbered migrations in another order, so databases applied them in that order), and
// the migration kit (platform/db/migrations.ts) refuses a list out of order and a new migration that sorts before
// one a database has already applied.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { MIGRATIONS, openDatabase } from '../src/database.js';
import { openStore, type DialectName, type Store } from '../src/platform/db/connect.js';
import type { DialectMigration, MigrationList } from '../src/platform/db/migrations.js';
import { DIALECTS, PG_URL, dropSchema, uniqueSchema } from './helpers/harness.js';

/** The order the old list (platform/db/migrations.ts before issue 12) named them in. */
const OLD_ORDER = [
  '0001_foundation', '0002_fleet', '0008_billing', '0003_templates', '0004_ssh_keys', '0005_instances', '0007_teams',
  '0006_tfa', '0009_volumes', '0010_serverless', '0011_fleet_heartbeat', '0012_billing_rates',
];
const byName = new Map(MIGRATIONS.migrations);
const sorted = (names: string[]) => [...names].sort();
const listOf = (names: string[], lastUnordered?: string): MigrationList => ({
  migrations: sorted(names).map((name) => [name, byName.get(name)!] as const),
  lastUnordered,
});

/** A place for one database, opened as often as a test likes, and removed at the end. */
function place(dialect: DialectName) {
  if (dialect === 'postgres') {
    const schema = uniqueSchema();
    return {
      open: (list?: MigrationList) => (list ? openStore(PG_URL!, { pgSchema: schema, pgPoolSize: 2, migrations: list }) : openDatabase(PG_URL!, { pgSchema: schema, pgPoolSize: 2 })),
      remove: () => dropSchema(schema),
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'gpuplane-migrations-'));
  const url = `sqlite:${join(dir, 'gpuplane.db')}`;
  return {
    open: (list?: MigrationList) => (list ? openStore(url, { migrations: list }) : openDatabase(url)),
    remove: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Applies the old list's migrations one release at a time, each a later open, as databases of that time did. */
async function migrateTheOldWay(open: (list: MigrationList) => Promise<Store>, upTo: number): Promise<void> {
  for (let i = 1; i <= upTo; i++) {
    const store = await open(listOf(OLD_ORDER.slice(0, i), '0012_billing_rates'));
    await store.close();
  }
}

/** Migration names in the order the database applied them. */
async function appliedOrder(store: Store): Promise<string[]> {
  const { rows } = await sql<{ name: string; timestamp: string }>`select name, timestamp from kysely_migration`.execute(store.db);
  return rows.sort((a, b) => a.timestamp.localeCompare(b.timestamp) || a.name.localeCompare(b.name)).map((r) => r.name);
}

const tableCount = async (store: Store, table: string) =>
  Number((await sql<{ n: number }>`select count(*) as n from ${sql.table(table)}`.execute(store.db)).rows[0].n);

const noop: DialectMigration = () => ({ async up() {} });

for (const dialect of DIALECTS) {
  describe(`migrations [${dialect}]`, () => {
    test('the list names every migration in order, under the names databases have recorded', () => {
      const names = MIGRATIONS.migrations.map(([name]) => name);
      assert.deepEqual(names.slice(0, OLD_ORDER.length), sorted(OLD_ORDER));
      assert.deepEqual(names, sorted(names), 'the later ones follow in order');
    });

    test('a database migrated in the old order opens with the new list, and is used as it is', async () => {
      const db = place(dialect);
      try {
        await migrateTheOldWay(db.open, OLD_ORDER.length);
        const store = await db.open();
        try {
          const applied = await appliedOrder(store);
          assert.deepEqual(applied.slice(0, OLD_ORDER.length), OLD_ORDER, 'the database applied them in the old order');
          assert.deepEqual(applied.slice(OLD_ORDER.length), MIGRATIONS.migrations.slice(OLD_ORDER.length).map(([n]) => n), 'then the later ones');
          // Every feature's tables are there and usable.
          for (const table of ['users', 'api_keys', 'fleet_machines', 'billing_contracts', 'billing_rates', 'templates', 'tfa_methods', 'teams', 'volumes']) {
            assert.equal(await tableCount(store, table), 0, table);
          }
        } finally {
          await store.close();
        }
      } finally {
        await db.remove();
      }
    });

    test('a database migrated part of the way in the old order gets the rest from the new list', async () => {
      const db = place(dialect);
      try {
        // 0001, 0002, 0008: billing had landed before 0003–0007.
        await migrateTheOldWay(db.open, 3);
        const store = await db.open();
        try {
          const applied = await appliedOrder(store);
          assert.deepEqual(applied.slice(0, 3), OLD_ORDER.slice(0, 3));
          assert.deepEqual(sorted(applied), MIGRATIONS.migrations.map(([n]) => n));
          assert.equal(await tableCount(store, 'serverless_endpoints'), 0);
        } finally {
          await store.close();
        }
      } finally {
        await db.remove();
      }
    });

    test('a list out of order is refused before anything is applied', async () => {
      const db = place(dialect);
      try {
        const list: MigrationList = { migrations: [['0001_foundation', byName.get('0001_foundation')!], ['0003_templates', noop], ['0002_fleet', noop]] };
        await assert.rejects(db.open(list), /migrations out of order: 0002_fleet is listed after 0003_templates/);
      } finally {
        await db.remove();
      }
    });

    test('after the once-unordered ones, a new migration that sorts before an applied one is refused', async () => {
      const db = place(dialect);
      try {
        const base = MIGRATIONS.migrations;
        await (await db.open({ ...MIGRATIONS, migrations: [...base, ['9014_later', noop]] })).close();
        const late: MigrationList = { ...MIGRATIONS, migrations: [...base, ['9013_late', noop], ['9014_later', noop]] };
        await assert.rejects(db.open(late), /database migration 9013_late sorts before 9014_later/);
        // One that sorts after every applied migration is applied.
        const store = await db.open({ ...MIGRATIONS, migrations: [...base, ['9014_later', noop], ['9015_next', noop]] });
        try {
          assert.deepEqual((await appliedOrder(store)).slice(-2), ['9014_later', '9015_next']);
        } finally {
          await store.close();
        }
      } finally {
        await db.remove();
      }
    });
  });
}
