// Migrations (src/migrations/): one file each, in order, each with one owner; a database made by the release before
// issue 30 (which renamed, split and renumbered them) opens with today's list, has its recorded names renamed, runs
// nothing again and ends with the schema of a new database; so do databases of before issue 12, which applied the
// first twelve out of order. The migration kit (platform/db/migrations.ts) refuses a list out of order and a new
// migration that sorts before one a database has applied.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { openDatabase } from '../src/database.js';
import { MIGRATIONS, OWNED_MIGRATIONS } from '../src/migrations/index.js';
import { RENAMED } from '../src/migrations/renamed.js';
import { openStore, type DialectName, type Store } from '../src/platform/db/connect.js';
import type { DialectMigration, MigrationList } from '../src/platform/db/migrations.js';
import { DIALECTS, PG_URL, dropSchema, uniqueSchema } from './helpers/harness.js';
import { appliedMigrations, loadRelease, schemaOf, startRelease } from './helpers/release-database.js';

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

/** A place for one database: opened by today's code, or reached directly to make it as a release did. */
function place(dialect: DialectName) {
  if (dialect === 'postgres') {
    const schema = uniqueSchema();
    return {
      schema,
      open: (list?: MigrationList) => (list ? openStore(PG_URL!, { pgSchema: schema, pgPoolSize: 2, migrations: list }) : openDatabase(PG_URL!, { pgSchema: schema, pgPoolSize: 2 })),
      async direct(): Promise<Kysely<any>> {
        const admin = new pg.Client({ connectionString: PG_URL });
        await admin.connect();
        await admin.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
        await admin.end();
        return new Kysely<any>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: PG_URL, max: 1, options: `-c search_path="${schema}"` }) }) });
      },
      remove: () => dropSchema(schema),
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'gpuplane-migrations-'));
  const file = join(dir, 'gpuplane.db');
  return {
    schema: undefined,
    open: (list?: MigrationList) => (list ? openStore(`sqlite:${file}`, { migrations: list }) : openDatabase(`sqlite:${file}`)),
    direct: async () => new Kysely<any>({ dialect: new SqliteDialect({ database: new SQLite(file) }) }),
    remove: async () => rmSync(dir, { recursive: true, force: true }),
  };
}
type Place = ReturnType<typeof place>;

/** Makes the place's database as the release did: each start applying the migrations of its list not yet applied. */
async function makeAsRelease(p: Place, dialect: DialectName, starts: string[][]): Promise<void> {
  const db = await p.direct();
  try {
    for (const names of starts) await startRelease(db, dialect, RELEASE, names, p.schema);
  } finally {
    await db.destroy();
  }
}

/** The schema of a new database of today's code. */
async function newSchema(dialect: DialectName): Promise<Record<string, unknown>> {
  const p = place(dialect);
  try {
    const store = await p.open();
    try {
      return await schemaOf(store.db, dialect);
    } finally {
      await store.close();
    }
  } finally {
    await p.remove();
  }
}

const count = async (store: Store, table: string) => Number((await sql<{ n: number }>`select count(*) as n from ${sql.table(table)}`.execute(store.db)).rows[0].n);

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

  test('every name the release before issue 30 recorded is renamed, and its new names are the list, in order', () => {
    assert.deepEqual(RENAMED.map(([old]) => old).sort(), [...RELEASE_NAMES].sort());
    assert.deepEqual(RENAMED.flatMap(([, now]) => now), NAMES.slice(0, RENAMED.flatMap(([, now]) => now).length));
    // The renamed table lists the old names in the order databases applied them: that of before issue 12 first.
    assert.deepEqual(RENAMED.slice(0, OLD_ORDER.length).map(([old]) => old), OLD_ORDER);
  });
});

for (const dialect of DIALECTS) {
  describe(`migrations [${dialect}]`, () => {
    let fresh: Record<string, unknown>;
    const sameAsNew = async (store: Store, what: string) => {
      fresh ??= await newSchema(dialect);
      assert.deepEqual(await schemaOf(store.db, dialect), fresh, `${what}: the schema of a new database`);
    };

    test('a database of the release before issue 30 opens: renamed, nothing run again, rows kept, the schema of a new one', async () => {
      const p = place(dialect);
      try {
        await makeAsRelease(p, dialect, [RELEASE_NAMES]);
        const db = await p.direct();
        const releaseApplied = await appliedMigrations(db);
        // Rows of that time: an account, and an idempotency record holding an instance key in clear, which the
        // release's 0019_instances_idempotency_sealed deleted when it ran (it must not run again).
        await db.insertInto('users').values({ email: 'old@example.com', created_at: 1 }).execute();
        const clear = JSON.stringify({ success: true, instance_api_key: 'gpk_clear' });
        await db.insertInto('instance_idempotency').values({ user_id: 1, idem_key: 'k', request_hash: 'h', reply: clear, created_at: 1 }).execute();
        await db.destroy();

        const store = await p.open();
        try {
          const applied = await appliedMigrations(store.db);
          assert.deepEqual(applied.map((m) => m.name), NAMES);
          const latest = releaseApplied.at(-1)!.timestamp;
          assert.deepEqual(new Set(applied.map((m) => m.timestamp)), new Set([latest]), 'each takes the time of the latest it was renamed from');
          assert.deepEqual(await store.db.selectFrom('users').select('email').execute(), [{ email: 'old@example.com' }]);
          assert.deepEqual(await store.db.selectFrom('instance_idempotency').select('reply').execute(), [{ reply: clear }]);
          await sameAsNew(store, 'the release before issue 30');
        } finally {
          await store.close();
        }
        // Opened again, there is nothing left to rename or apply.
        const again = await p.open();
        try {
          assert.deepEqual((await appliedMigrations(again.db)).map((m) => m.name), NAMES);
        } finally {
          await again.close();
        }
      } finally {
        await p.remove();
      }
    });

    test('a database part of the way through that release gets the rest', async () => {
      const p = place(dialect);
      try {
        const upTo = RELEASE_NAMES.indexOf('0022_prepay_benchmarks') + 1;
        await makeAsRelease(p, dialect, [RELEASE_NAMES.slice(0, upTo)]);
        const store = await p.open();
        try {
          assert.deepEqual((await appliedMigrations(store.db)).map((m) => m.name), NAMES);
          await sameAsNew(store, 'up to 0022_prepay_benchmarks');
        } finally {
          await store.close();
        }
      } finally {
        await p.remove();
      }
    });

    test('a database of before issue 12, which applied the first twelve out of order, opens', async () => {
      const p = place(dialect);
      try {
        // One start per migration, as they landed; then the release's own start with the rest.
        await makeAsRelease(p, dialect, [...OLD_ORDER.map((_, i) => OLD_ORDER.slice(0, i + 1)), RELEASE_NAMES]);
        const db = await p.direct();
        assert.deepEqual((await appliedMigrations(db)).map((m) => m.name).slice(0, OLD_ORDER.length), OLD_ORDER, 'applied in the old order');
        await db.destroy();
        const store = await p.open();
        try {
          assert.deepEqual((await appliedMigrations(store.db)).map((m) => m.name), NAMES);
          await sameAsNew(store, 'before issue 12');
        } finally {
          await store.close();
        }
      } finally {
        await p.remove();
      }
    });

    test('a database left part of the way in the old order (billing before templates) gets the rest', async () => {
      const p = place(dialect);
      try {
        await makeAsRelease(p, dialect, OLD_ORDER.slice(0, 3).map((_, i) => OLD_ORDER.slice(0, i + 1)));
        const store = await p.open();
        try {
          assert.deepEqual((await appliedMigrations(store.db)).map((m) => m.name), NAMES);
          assert.equal(await count(store, 'serverless_endpoints'), 0);
          await sameAsNew(store, '0001, 0002, 0008 of before issue 12');
        } finally {
          await store.close();
        }
      } finally {
        await p.remove();
      }
    });

    if (dialect === 'postgres') {
      test('several processes opening a database of the release at once rename it once', async () => {
        const p = place(dialect);
        try {
          await makeAsRelease(p, dialect, [RELEASE_NAMES]);
          const stores = await Promise.all([p.open(), p.open(), p.open()]);
          try {
            for (const store of stores) assert.deepEqual((await appliedMigrations(store.db)).map((m) => m.name), NAMES);
          } finally {
            await Promise.all(stores.map((s) => s.close()));
          }
        } finally {
          await p.remove();
        }
      });
    }

    test('a renaming to a migration the list lacks is refused before the database is touched', async () => {
      const p = place(dialect);
      try {
        await makeAsRelease(p, dialect, [RELEASE_NAMES]);
        const broken: MigrationList = { ...MIGRATIONS, renamed: [...RENAMED, ['0099_gone', ['0100_nowhere']]] };
        await assert.rejects(p.open(broken), /migration 0099_gone is renamed to 0100_nowhere, which the list does not have/);
        const db = await p.direct();
        assert.deepEqual((await appliedMigrations(db)).map((m) => m.name).sort(), [...RELEASE_NAMES].sort());
        await db.destroy();
      } finally {
        await p.remove();
      }
    });

    test('a list out of order is refused before anything is applied', async () => {
      const p = place(dialect);
      try {
        const list: MigrationList = { migrations: [['0001_users', MIGRATIONS.migrations[0][1]], ['0003_b', noop], ['0002_a', noop]] };
        await assert.rejects(p.open(list), /migrations out of order: 0002_a is listed after 0003_b/);
      } finally {
        await p.remove();
      }
    });

    test('a new migration that sorts before an applied one is refused', async () => {
      const p = place(dialect);
      try {
        const base = MIGRATIONS.migrations;
        await (await p.open({ migrations: [...base, ['9014_later', noop]] })).close();
        const late: MigrationList = { migrations: [...base, ['9013_late', noop], ['9014_later', noop]] };
        await assert.rejects(p.open(late), /expected previously executed migration 9014_later to be at index \d+ but 9013_late was found in its place/);
        // One that sorts after every applied migration is applied.
        const store = await p.open({ migrations: [...base, ['9014_later', noop], ['9015_next', noop]] });
        try {
          assert.deepEqual((await appliedMigrations(store.db)).slice(-2).map((m) => m.name), ['9014_later', '9015_next']);
        } finally {
          await store.close();
        }
      } finally {
        await p.remove();
      }
    });
  });
}
