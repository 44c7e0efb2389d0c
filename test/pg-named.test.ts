// Server-side prepared statements on PostgreSQL (platform/db/pg-named.ts): a statement with parameters is parsed once
// per connection and run by name after; one without parameters, and any past the cap, runs as before; a table changed
// under a prepared statement fails it once, and the next run prepares it again.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { sql } from 'kysely';
import { nameStatements } from '../src/platform/db/pg-named.js';
import { openDatabase } from '../src/database.js';
import { PG_URL, dropSchema, requirePostgres, uniqueSchema } from './helpers/harness.js';

/** The statements the connection has prepared (its texts). */
async function preparedTexts(c: pg.ClientBase): Promise<string[]> {
  const { rows } = await c.query<{ statement: string }>('select statement from pg_prepared_statements order by prepare_time');
  return rows.map((r) => r.statement);
}

describe('pg-named: prepared statements on PostgreSQL', () => {
  const schema = uniqueSchema();
  let admin: pg.Client;

  before(async () => {
    admin = new pg.Client({ connectionString: requirePostgres() });
    await admin.connect();
    await admin.query(`CREATE SCHEMA "${schema}"`);
    await admin.query(`CREATE TABLE "${schema}".t (id integer primary key, a text)`);
    await admin.query(`INSERT INTO "${schema}".t VALUES (1, 'one'), (2, 'two')`);
  });
  after(async () => {
    if (!admin) return; // PostgreSQL was missing: `before` failed every test
    await admin.end();
    await dropSchema(schema);
  });

  /** One connection, so that what one query prepared is there for the next. */
  function onePool(max?: number) {
    const pool = new pg.Pool({ connectionString: PG_URL, max: 1, options: `-c search_path="${schema}"` });
    const named = nameStatements(pool, max);
    return { pool, named };
  }

  test('before enable() nothing is named; after, a statement with parameters is prepared once and runs by name', async () => {
    const { pool, named } = onePool();
    try {
      const c = await pool.connect();
      try {
        const text = 'select a from t where id = $1';
        assert.deepEqual((await c.query(text, [1])).rows, [{ a: 'one' }]);
        assert.deepEqual(await preparedTexts(c), [], 'migrations run before enable(): unnamed');
        named.enable();
        assert.deepEqual((await c.query(text, [1])).rows, [{ a: 'one' }]);
        assert.deepEqual((await c.query(text, [2])).rows, [{ a: 'two' }], 'the same statement, new values');
        assert.deepEqual(await preparedTexts(c), [text], 'prepared once for both runs');
        // Without parameters: the simple protocol, which allows several statements in one text (migrations).
        const two = await c.query('select 1 as x; select 2 as y', []);
        assert.equal((two as unknown as pg.QueryResult[]).length, 2);
        assert.deepEqual(await preparedTexts(c), [text]);
        assert.equal(named.count(), 1);
      } finally {
        c.release();
      }
    } finally {
      await pool.end();
    }
  });

  test('past the cap, statements run unnamed and still answer', async () => {
    const { pool, named } = onePool(2);
    named.enable();
    try {
      const c = await pool.connect();
      try {
        for (let i = 0; i < 4; i++) assert.deepEqual((await c.query(`select $1::int + ${i} as n`, [10])).rows, [{ n: 10 + i }]);
        assert.equal(named.count(), 2);
        assert.deepEqual(await preparedTexts(c), ['select $1::int + 0 as n', 'select $1::int + 1 as n']);
      } finally {
        c.release();
      }
    } finally {
      await pool.end();
    }
  });

  test("a table changed under a prepared statement fails it once; the next run prepares it again", async () => {
    const { pool, named } = onePool();
    named.enable();
    try {
      const c = await pool.connect();
      try {
        const text = 'select * from t where id = $1';
        assert.deepEqual((await c.query(text, [1])).rows, [{ id: 1, a: 'one' }]);
        // Another process migrates the table.
        await admin.query(`ALTER TABLE "${schema}".t ADD COLUMN b integer DEFAULT 7`);
        await assert.rejects(c.query(text, [1]), (e: { code?: string }) => e.code === '0A000');
        assert.deepEqual((await c.query(text, [1])).rows, [{ id: 1, a: 'one', b: 7 }]);
        assert.equal(named.count(), 1, 'the text has a new name in place of the old one');
      } finally {
        c.release();
      }
    } finally {
      await pool.end();
    }
  });

  test("a gpuplane store prepares its statements once migrated", async () => {
    const storeSchema = uniqueSchema();
    const store = await openDatabase(PG_URL!, { pgSchema: storeSchema, pgPoolSize: 1 });
    try {
      const texts = await store.db.transaction().execute(async (tx) => {
        const q = (id: number) => tx.selectFrom('users').select('id').where('id', '=', id).execute();
        await q(1);
        await q(2);
        return (await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(tx)).rows.map((r) => r.statement);
      });
      assert.deepEqual(texts, ['select "id" from "users" where "id" = $1']);
    } finally {
      await store.close();
      await dropSchema(storeSchema);
    }
  });
});
