// Destroyed instances and revoked keys stay as history; the hot paths' reads and writes of live ones must not walk
// it. With a long history (3,000 destroyed instances of one user on one machine, 3,000 revoked keys), each database's
// planner must take the indexes made for them (migrations 0041, 0042) for the statements as the code compiles them:
// SQLite without statistics; PostgreSQL with them (ANALYZE), as the generic plan of a prepared statement (the server
// names its statements, platform/db/pg-named.ts). PostgreSQL keeps full indexes for the instances (0033 says why);
// there the scope lookup by id must still take the primary key.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CompiledQuery, sql } from 'kysely';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { addMachine, offerFor, rentOk } from './instances-fixtures.js';
import { keysStore } from '../src/keys/keys-store.js';
import { instancesStore } from '../src/instances/instances-store.js';
import type { Db, Tx } from '../src/platform/db/connect.js';

const HISTORY = 3000;
const BATCH = 200;
/** Any index of live instances will do: none holds the history. */
const LIVE_INSTANCES = /instances_live_(user|machine|team)\b/;

/** `db`, recording every statement it runs as compiled: built ones (a plugin) and precompiled ones (executeQuery). */
function recording(db: Db | Tx, seen: CompiledQuery[]): Tx {
  const plugged = db.withPlugin({
    transformQuery: (a) => (seen.push(db.getExecutor().compileQuery(a.node, a.queryId)), a.node),
    transformResult: async (a) => a.result,
  });
  const execute = plugged.executeQuery.bind(plugged);
  return Object.assign(plugged, { executeQuery: (q: CompiledQuery) => (seen.push(q), execute(q)) }) as Tx;
}

/** A statement's parameter as an SQL literal (numbers and plain text are all these statements take). */
function literal(v: unknown): string {
  if (typeof v === 'number') return String(v);
  if (typeof v === 'string') return `'${v.replaceAll("'", "''")}'`;
  if (v === null) return 'NULL';
  throw new Error(`no literal for ${typeof v}`);
}

async function planOf(app: TestApp, q: CompiledQuery): Promise<string> {
  if (app.store.dialect === 'sqlite') {
    const rows = (await app.store.db.executeQuery<{ detail: string }>(CompiledQuery.raw(`EXPLAIN QUERY PLAN ${q.sql}`, [...q.parameters]))).rows;
    return rows.map((r) => r.detail).join('\n');
  }
  return app.store.db.connection().execute(async (c) => {
    await sql`SET plan_cache_mode = force_generic_plan`.execute(c);
    try {
      await sql.raw(`PREPARE live_plan AS ${q.sql}`).execute(c);
      try {
        const rows = (await sql.raw<{ 'QUERY PLAN': string }>(`EXPLAIN EXECUTE live_plan(${q.parameters.map(literal).join(', ')})`).execute(c)).rows;
        return rows.map((r) => r['QUERY PLAN']).join('\n');
      } finally {
        await sql`DEALLOCATE live_plan`.execute(c);
      }
    } finally {
      await sql`RESET plan_cache_mode`.execute(c);
    }
  });
}

forEachDialect('live rows through their partial indexes', (app) => {
  test('revoking an instance key, finding and listing instances use the indexes made for them', async () => {
    const t = app();
    const { user, api_key } = await t.createUser({ credit: 1000 });
    const m = await addMachine(t);
    const { id } = await rentOk(t, offerFor(m, 1), {}, api_key);
    const db = t.store.db;
    const template = await db.selectFrom('instances').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    const { id: _id, ...copy } = template;
    for (let i = 0; i < HISTORY; i += BATCH) {
      await db.insertInto('instances').values(Array.from({ length: BATCH }, () => ({ ...copy, destroyed_at: 1 }))).execute();
      await db.insertInto('api_keys').values(Array.from({ length: BATCH }, (_, k) => ({
        user_id: user.id, key_hash: `history-${i + k}`, kind: 'instance', instance_id: 1_000_000 + i + k, is_bootstrap: 0, created_at: 0, revoked_at: 1,
      }))).execute();
    }
    if (t.store.dialect === 'postgres') await sql`ANALYZE`.execute(db);

    const seen: CompiledQuery[] = [];
    const rec = recording(db, seen);
    const scope = { userId: user.id, teamId: null };
    const sqlite = t.store.dialect === 'sqlite';
    const checks: Array<[string, () => Promise<unknown>, RegExp]> = [
      ['revoke an instance key', () => keysStore(rec, t.store.dialect).revokeInstanceKeys(user.id, id, t.clock.now()), sqlite ? /api_keys_live_user/ : /api_keys_instance/],
      ['find an instance in scope', () => instancesStore(rec, t.store.dialect).findInScope(id, scope), sqlite ? /INTEGER PRIMARY KEY/ : /instances_pkey/],
    ];
    if (sqlite) {
      checks.push(
        ['list the user\'s instances', () => instancesStore(rec, t.store.dialect).listInScope(scope), LIVE_INSTANCES],
        ['list a machine\'s instances', () => rec.transaction().execute((tx) => {
          const recTx = recording(tx, seen); // the transaction's own statements, run ones included
          return instancesStore(recTx, t.store.dialect).listOnMachines([m.machine_id], recTx);
        }), LIVE_INSTANCES],
        ['find a machine\'s waiting instances', () => instancesStore(rec, t.store.dialect).waitingOnMachine(m.machine_id), LIVE_INSTANCES],
      );
    }
    for (const [what, run, index] of checks) {
      seen.length = 0;
      await run();
      // The last: a prepared statement is recorded as built (its values stand-ins), then as run.
      const statement = seen.findLast((q) => /\binstances\b|\bapi_keys\b/.test(q.sql));
      assert.ok(statement, `${what}: a statement ran`);
      const plan = await planOf(t, statement);
      assert.match(plan, index, `${what}: ${statement.sql}\n${plan}`);
    }
  });
});
