// Destroyed instances and revoked keys stay as history; the reads and writes of live ones must not walk it. With a
// long history (3,000 destroyed instances of one user on one machine, 3,000 revoked keys), each database's planner
// must take the partial indexes of live rows (migrations 0033, 0034) for the statements the hot paths run: SQLite
// without statistics, PostgreSQL with them (ANALYZE), each given the statement as the code compiles it.
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
/** Any index of live instances will do (PostgreSQL takes the smallest that applies): none holds the history. */
const LIVE_INSTANCES = /instances_live_(user|machine|team)\b/;

/** `db`, recording every statement it runs as compiled: built ones (a plugin) and precompiled ones (executeQuery). */
function recording(db: Db, seen: CompiledQuery[]): Tx {
  const plugged = db.withPlugin({
    transformQuery: (a) => (seen.push(db.getExecutor().compileQuery(a.node, a.queryId)), a.node),
    transformResult: async (a) => a.result,
  });
  const execute = plugged.executeQuery.bind(plugged);
  return Object.assign(plugged, { executeQuery: (q: CompiledQuery) => (seen.push(q), execute(q)) }) as Tx;
}

async function planOf(app: TestApp, q: CompiledQuery): Promise<string> {
  const explain = app.store.dialect === 'postgres' ? 'EXPLAIN ' : 'EXPLAIN QUERY PLAN ';
  const rows = (await app.store.db.executeQuery<Record<string, unknown>>(CompiledQuery.raw(explain + q.sql, [...q.parameters]))).rows;
  return rows.map((r) => String(r['QUERY PLAN'] ?? r.detail)).join('\n');
}

forEachDialect('live rows through their partial indexes', (app) => {
  test('revoking an instance key, listing a user\'s instances and a machine\'s use the indexes of live rows', async () => {
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
        user_id: user.id, key_hash: `history-${i + k}`, kind: 'instance', instance_id: id, is_bootstrap: 0, created_at: 0, revoked_at: 1,
      }))).execute();
    }
    if (t.store.dialect === 'postgres') await sql`ANALYZE`.execute(db);

    const seen: CompiledQuery[] = [];
    const rec = recording(db, seen);
    const scope = { userId: user.id, teamId: null };
    const checks: Array<[string, () => Promise<unknown>, RegExp]> = [
      ['revoke an instance key', () => keysStore(rec, t.store.dialect).revokeInstanceKeys(user.id, id, t.clock.now()), /api_keys_live_user/],
      ['list the user\'s instances', () => instancesStore(rec, t.store.dialect).listInScope(scope), LIVE_INSTANCES],
      ['list a machine\'s instances', () => rec.transaction().execute((tx) => instancesStore(tx, t.store.dialect).listOnMachines([m.machine_id], tx)), LIVE_INSTANCES],
      ['find a machine\'s waiting instances', () => instancesStore(rec, t.store.dialect).waitingOnMachine(m.machine_id), LIVE_INSTANCES],
    ];
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
