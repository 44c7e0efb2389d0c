// The key lookup of every request (keys-store findLiveByHash) reads the key and its user packed into one JSON
// array: it must give exactly the rows the tables hold, whatever the values (NULLs, fractions, large integers, text
// that JSON escapes), on both dialects.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { sha256Hex } from '../src/platform/crypto.js';
import { sql } from 'kysely';
import { batchSize, keysStore, packedBatchLookup } from '../src/keys/keys-store.js';
import type { Tx } from '../src/platform/db/connect.js';

forEachDialect('key lookup', (app, dialect) => {
  const rowsOf = async (keyId: number, userId: number) => {
    const db = app().store.db;
    return {
      key: await db.selectFrom('api_keys').selectAll().where('id', '=', keyId).executeTakeFirstOrThrow(),
      user: await db.selectFrom('users').selectAll().where('id', '=', userId).executeTakeFirstOrThrow(),
    };
  };

  test('the packed row is exactly the tables’ rows', async () => {
    const { user, api_key } = await app().createUser({ full_name: 'Zoë "Q" \\ O\u2028Brien 😀', phone_number: '+15550001234', credit: 12.345678 });
    const { services, store } = app();
    const found = await services.keys.findLiveByHash(sha256Hex(api_key));
    assert.ok(found);
    assert.deepEqual(found, { ...(await rowsOf(found.key.id, user.id)), runningRate: 0 });

    // Odd values in every kind of column: fractions of a second, the largest exact integer, NULLs and JSON text.
    await store.db
      .updateTable('users')
      .set({ credit_micro: Number.MAX_SAFE_INTEGER, email_verified_at: null, ssh_key: 'ssh-ed25519 AAAA\tkey\n', password_hash: null })
      .where('id', '=', user.id)
      .execute();
    await store.db
      .updateTable('api_keys')
      .set({ last_used_at: 1_800_000_000.123456, created_at: 0.1 + 0.2, name: null, permissions: '{"api":{"user_read":{}}}' })
      .where('id', '=', found.key.id)
      .execute();
    const again = await services.keys.findLiveByHash(sha256Hex(api_key));
    assert.deepEqual(again, { ...(await rowsOf(found.key.id, user.id)), runningRate: 0 });
    assert.equal(again?.key.last_used_at, 1_800_000_000.123456);
    assert.equal(again?.key.created_at, 0.1 + 0.2);
    assert.equal(again?.user.credit_micro, Number.MAX_SAFE_INTEGER);
  });

  test('a team key carries its team; a revoked or unknown key finds nothing', async () => {
    const { user } = await app().createUser();
    const made = await app().services.keysService.create({ user_id: user.id, kind: 'user', name: 'team', team_id: 7 });
    const found = await app().services.keys.findLiveByHash(sha256Hex(made.secret));
    assert.deepEqual(found, { ...(await rowsOf(made.key.id, user.id)), runningRate: 0 });

    await app().services.keys.revoke(made.key.id, app().clock.now());
    assert.equal(await app().services.keys.findLiveByHash(sha256Hex(made.secret)), undefined);
    assert.equal(await app().services.keys.findLiveByHash(sha256Hex('gpk_no_such_key_0123456789abcdef')), undefined);
  });

  /** The app's database, counting the statements run through it. */
  const counting = () => {
    const seen = { statements: 0 };
    const db = app().store.db.withPlugin({
      transformQuery: (a) => a.node,
      transformResult: async (a) => {
        seen.statements++;
        return a.result;
      },
    }) as unknown as Tx;
    return { db, seen };
  };

  test('lookups at once each get their own key (the same twice, a revoked, an unknown); on PostgreSQL in one statement', async () => {
    const a = await app().createUser();
    const b = await app().createUser();
    const c = await app().services.keysService.create({ user_id: b.user.id, kind: 'user', name: 'gone' });
    await app().services.keys.revoke(c.key.id, app().clock.now());
    const { db, seen } = counting();
    const keys = keysStore(db, app().store.dialect);
    const asked = [a.api_key, b.api_key, a.api_key, c.secret, 'gpk_no_such_key_0123456789abcdef'];
    const found = await Promise.all(asked.map((k) => keys.findLiveByHash(sha256Hex(k))));
    assert.deepEqual(found.map((f) => f?.user.id), [a.user.id, b.user.id, a.user.id, undefined, undefined]);
    assert.deepEqual(found[0], { ...(await rowsOf(found[0]!.key.id, a.user.id)), runningRate: 0 });
    assert.deepEqual(found[1], { ...(await rowsOf(found[1]!.key.id, b.user.id)), runningRate: 0 });
    assert.equal(seen.statements, app().store.dialect === 'postgres' ? 1 : asked.length);
  });

  // SQLite looks keys up one by one.
  if (dialect === 'postgres') test('on PostgreSQL the batch lookup finds each key through the unique index, as a prepared statement\'s generic plan too', async () => {
    // Enough keys that a scan costs more than an index probe for one digest, but not for the ten the planner assumes
    // of an array it does not know: `key_hash = ANY($1)` was planned as a scan of every key until ~100 pages.
    const { user, api_key } = await app().createUser();
    const db = app().store.db;
    await sql`INSERT INTO api_keys (user_id, key_hash, kind, created_at, revoked_at)
      SELECT ${user.id}, md5(g::text), 'instance', 0, 1 FROM generate_series(1, 1500) g`.execute(db);
    await sql`ANALYZE api_keys`.execute(db);
    const digests = (size: number) => Array.from({ length: size }, (_, i) => (i === 0 ? sha256Hex(api_key) : ''));
    const literals = (size: number) => digests(size).map((d) => `'${d}'`).join(', ');
    for (const size of [1, 4]) {
      const plan = await db.connection().execute(async (c) => {
        await sql`SET plan_cache_mode = force_generic_plan`.execute(c);
        try {
          await sql.raw(`PREPARE key_batch_plan(${Array(size).fill('text').join(', ')}) AS ${packedBatchLookup(c, size).sql}`).execute(c);
          const rows = (await sql.raw<{ 'QUERY PLAN': string }>(`EXPLAIN EXECUTE key_batch_plan(${literals(size)})`).execute(c)).rows;
          return rows.map((r) => r['QUERY PLAN']).join('\n');
        } finally {
          await sql`DEALLOCATE key_batch_plan`.execute(c);
          await sql`RESET plan_cache_mode`.execute(c);
        }
      });
      assert.doesNotMatch(plan, /Seq Scan on api_keys/, plan);
      assert.match(plan, /Index Scan using api_keys_key_hash_key on api_keys/, plan);
    }

    // Left to choose (plan_cache_mode auto), PostgreSQL plans a prepared statement for its values five times, then
    // keeps the generic plan if it costs no more: the lookup must not be planned again on every run (an array of
    // digests was: its generic plan was costed for a hundred of them).
    const plans = await db.connection().execute(async (c) => {
      await sql.raw(`PREPARE key_batch_runs(text, text) AS ${packedBatchLookup(c, 2).sql}`).execute(c);
      try {
        for (let run = 0; run < 8; run++) await sql.raw(`EXECUTE key_batch_runs(${literals(2)})`).execute(c);
        return (await sql<{ generic_plans: number; custom_plans: number }>`SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = 'key_batch_runs'`.execute(c)).rows[0];
      } finally {
        await sql`DEALLOCATE key_batch_runs`.execute(c);
      }
    });
    assert.deepEqual(plans, { generic_plans: 3, custom_plans: 5 });
  });

  test('a batch of any size finds each of its keys once, and nothing for the places left empty', async () => {
    const users = await Promise.all(Array.from({ length: 5 }, () => app().createUser()));
    const keys = keysStore(app().store.db, app().store.dialect);
    const asked = [...users.map((u) => sha256Hex(u.api_key)), sha256Hex('gpk_not_a_key'), sha256Hex(users[0].api_key)];
    const found = await Promise.all(asked.map((h) => keys.findLiveByHash(h)));
    assert.deepEqual(found.map((f) => f?.user.id), [...users.map((u) => u.user.id), undefined, users[0].user.id]);
    assert.deepEqual([1, 2, 3, 5, 8, 256].map(batchSize), [1, 2, 4, 8, 8, 256]);
  });

  test('a lookup asked while another may run sees what was committed before it was asked', async () => {
    const a = await app().createUser();
    const { db } = counting();
    const keys = keysStore(db, app().store.dialect);
    const hash = sha256Hex(a.api_key);
    const first = keys.findLiveByHash(hash);
    const key = (await rowsOf((await app().services.keys.findLiveByHash(hash))!.key.id, a.user.id)).key;
    await app().store.db.updateTable('api_keys').set({ revoked_at: app().clock.now() }).where('id', '=', key.id).execute();
    const second = keys.findLiveByHash(hash);
    await first; // asked before the revoke: either answer may come, depending on when its statement ran
    assert.equal(await second, undefined, 'asked after the revoke');
  });
});
