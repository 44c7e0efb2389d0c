// The key lookup of every request (keys-store findLiveByHash) reads the key and its user packed into one JSON
// array: it must give exactly the rows the tables hold, whatever the values (NULLs, fractions, large integers, text
// that JSON escapes), on both dialects.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { sha256Hex } from '../src/platform/crypto.js';

forEachDialect('key lookup', (app) => {
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
});
