// Statements over a list written once (platform/db/prepared.ts `preparedForOne`, `preparedRows`): a list of one runs
// the statement compiled the first time, a longer list builds it again, and both give what the plain statement gives.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql, type Kysely } from 'kysely';
import type { Tx } from '../src/platform/db/connect.js';
import { preparedForOne, preparedRows } from '../src/platform/db/prepared.js';
import { forEachDialect } from './helpers/harness.js';

type Row = { id: number; a: string };

forEachDialect('prepared statements over a list', (app) => {
  test('preparedForOne: one id compiled once, more built each time; the rows of the plain statement', async () => {
    const db = app().store.db;
    await sql`CREATE TABLE prep_items (id integer PRIMARY KEY, a text NOT NULL)`.execute(db);
    await sql`INSERT INTO prep_items VALUES (1, 'one'), (2, 'two'), (3, 'three')`.execute(db);
    const built: number[][] = [];
    const byIds = preparedForOne(db, ['min'], (tx: Tx, ids, q: { min: number }) => {
      built.push([...ids]);
      return { compile: () => sql<Row>`SELECT id, a FROM prep_items WHERE id IN (${sql.join(ids)}) AND id >= ${q.min} ORDER BY id`.compile(tx) };
    });

    assert.deepEqual((await byIds(db, [2], { min: 0 })).rows, [{ id: 2, a: 'two' }]);
    assert.deepEqual((await byIds(db, [3], { min: 0 })).rows, [{ id: 3, a: 'three' }]);
    assert.deepEqual((await byIds(db, [1], { min: 2 })).rows, [], 'the other values are parameters of the one statement');
    assert.equal(built.length, 1, 'a list of one is built once');
    assert.equal(typeof built[0][0], 'object', 'and built with a stand-in for the id, not a value');

    assert.deepEqual((await byIds(db, [3, 1], { min: 0 })).rows, [{ id: 1, a: 'one' }, { id: 3, a: 'three' }]);
    assert.deepEqual((await byIds(db, [1, 2, 3], { min: 2 })).rows, [{ id: 2, a: 'two' }, { id: 3, a: 'three' }]);
    assert.deepEqual(built.slice(1), [[3, 1], [1, 2, 3]], 'longer lists are built each time, with their values');
    await sql`DROP TABLE prep_items`.execute(db);
  });

  test('preparedRows: one row compiled once per set of keys, more rows in one statement, none for no rows', async () => {
    const db = app().store.db;
    await sql`CREATE TABLE prep_rows (id integer PRIMARY KEY, a text)`.execute(db);
    const built: number[] = [];
    const insert = preparedRows(db, (tx: Tx, rows: readonly Partial<Row>[]) => {
      built.push(rows.length);
      return (tx as unknown as Kysely<{ prep_rows: { id: number; a: string | null } }>).insertInto('prep_rows').values([...rows] as Row[]);
    });

    await insert(db, [{ id: 1, a: 'one' }]);
    await insert(db, [{ id: 2, a: 'two' }]);
    await insert(db, [{ id: 3 }]);
    await insert(db, [{ id: 4 }]);
    await insert(db, []);
    await insert(db, [{ id: 5, a: 'five' }, { id: 6, a: 'six' }]);
    assert.deepEqual(built, [1, 1, 2], 'one build per set of keys of a single row, one per longer list, none for none');
    const { rows } = await sql<Row>`SELECT id, a FROM prep_rows ORDER BY id`.execute(db);
    assert.deepEqual(rows, [
      { id: 1, a: 'one' }, { id: 2, a: 'two' }, { id: 3, a: null }, { id: 4, a: null }, { id: 5, a: 'five' }, { id: 6, a: 'six' },
    ]);
    await sql`DROP TABLE prep_rows`.execute(db);
  });
});
