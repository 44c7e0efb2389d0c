// A database made by the release before issue 30 (which renamed, split and renumbered the migrations) opens with
// today's list: its recorded names are renamed, nothing runs again, its rows stay, and it ends with the schema of a
// new database (tables, columns, indexes, constraints, triggers, functions). So do databases part of the way through
// that release, and those of before issue 12, which applied the first twelve out of order. The release is replayed
// from its record (test/fixtures/migrations-before-issue-30.json, scripts/record-migrations.ts).
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { MIGRATIONS } from '../src/migrations/index.js';
import { RENAMED } from '../src/migrations/renamed.js';
import type { DialectName, Store } from '../src/platform/db/connect.js';
import { DIALECTS } from './helpers/harness.js';
import { appliedMigrations, databasePlace, loadRelease, makeAsRelease, schemaOf } from './helpers/release-database.js';

const RELEASE = loadRelease('migrations-before-issue-30.json');
const RELEASE_NAMES = RELEASE.sqlite.map((m) => m.name);
/** The order the list named the first twelve in until issue 12: databases of that time applied them so. */
const OLD_ORDER = [
  '0001_foundation', '0002_fleet', '0008_billing', '0003_templates', '0004_ssh_keys', '0005_instances', '0007_teams',
  '0006_tfa', '0009_volumes', '0010_serverless', '0011_fleet_heartbeat', '0012_billing_rates',
];
const NAMES = MIGRATIONS.migrations.map(([name]) => name);

/** The schema of a new database of today's code. */
async function newSchema(dialect: DialectName): Promise<Record<string, unknown>> {
  const p = databasePlace(dialect);
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

for (const dialect of DIALECTS) {
  describe(`migrations: databases of earlier releases [${dialect}]`, () => {
    let fresh: Record<string, unknown> | undefined;
    /** Opens the place's database with today's code: every migration of the list applied, the schema of a new one. */
    const openUpgraded = async (p: ReturnType<typeof databasePlace>, what: string): Promise<Store> => {
      const store = await p.open();
      try {
        assert.deepEqual((await appliedMigrations(store.db)).map((m) => m.name), NAMES, `${what}: every migration applied`);
        fresh ??= await newSchema(dialect);
        assert.deepEqual(await schemaOf(store.db, dialect), fresh, `${what}: the schema of a new database`);
        return store;
      } catch (err) {
        await store.close();
        throw err;
      }
    };

    test('the release before issue 30: renamed, nothing run again, rows kept, the schema of a new database', async () => {
      const p = databasePlace(dialect);
      try {
        await makeAsRelease(p, dialect, RELEASE, [RELEASE_NAMES]);
        const db = await p.direct();
        const latest = (await appliedMigrations(db)).at(-1)!.timestamp;
        // Rows of that time: an account, and an idempotency record holding an instance key in clear, which the
        // release's 0019_instances_idempotency_sealed deleted when it ran (it must not run again).
        await db.insertInto('users').values({ email: 'old@example.com', created_at: 1 }).execute();
        const clear = JSON.stringify({ success: true, instance_api_key: 'gpk_clear' });
        await db.insertInto('instance_idempotency').values({ user_id: 1, idem_key: 'k', request_hash: 'h', reply: clear, created_at: 1 }).execute();
        await db.destroy();

        const store = await openUpgraded(p, 'the release before issue 30');
        try {
          // The renamed ones; migrations added since (0045 on) ran just now.
          const renamedTo = new Set(RENAMED.flatMap(([, now]) => now));
          const times = new Set((await appliedMigrations(store.db)).filter((m) => renamedTo.has(m.name)).map((m) => m.timestamp));
          assert.deepEqual(times, new Set([latest]), 'each takes the time of the latest it was renamed from');
          assert.deepEqual(await store.db.selectFrom('users').select('email').execute(), [{ email: 'old@example.com' }]);
          assert.deepEqual(await store.db.selectFrom('instance_idempotency').select('reply').execute(), [{ reply: clear }]);
        } finally {
          await store.close();
        }
        // Opened again, nothing is left to rename or apply.
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

    test('a database part of the way through that release (up to a migration split in four) gets the rest', async () => {
      const p = databasePlace(dialect);
      try {
        await makeAsRelease(p, dialect, RELEASE, [RELEASE_NAMES.slice(0, RELEASE_NAMES.indexOf('0022_prepay_benchmarks') + 1)]);
        await (await openUpgraded(p, 'up to 0022_prepay_benchmarks')).close();
      } finally {
        await p.remove();
      }
    });

    test('a database of before issue 12, which applied the first twelve out of order, opens', async () => {
      const p = databasePlace(dialect);
      try {
        // One start per migration, as they landed; then the release's start with the rest.
        await makeAsRelease(p, dialect, RELEASE, [...OLD_ORDER.map((_, i) => OLD_ORDER.slice(0, i + 1)), RELEASE_NAMES]);
        const db = await p.direct();
        assert.deepEqual((await appliedMigrations(db)).map((m) => m.name).slice(0, OLD_ORDER.length), OLD_ORDER, 'applied in the old order');
        await db.destroy();
        await (await openUpgraded(p, 'before issue 12')).close();
      } finally {
        await p.remove();
      }
    });

    test('a database left part of the way in the old order (billing before templates) gets the rest', async () => {
      const p = databasePlace(dialect);
      try {
        await makeAsRelease(p, dialect, RELEASE, OLD_ORDER.slice(0, 3).map((_, i) => OLD_ORDER.slice(0, i + 1)));
        const store = await openUpgraded(p, '0001, 0002, 0008 of before issue 12');
        try {
          const { rows } = await sql<{ n: number }>`select count(*) as n from serverless_endpoints`.execute(store.db);
          assert.equal(Number(rows[0].n), 0);
        } finally {
          await store.close();
        }
      } finally {
        await p.remove();
      }
    });

    if (dialect === 'postgres') {
      test('several processes opening a database of the release at once rename it once', async () => {
        const p = databasePlace(dialect);
        try {
          await makeAsRelease(p, dialect, RELEASE, [RELEASE_NAMES]);
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
  });
}
