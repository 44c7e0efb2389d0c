// challenge_creation_failed (spec 2FA errors: "Challenge creation failed in authorize-new-method; retry", HTTP 500):
// when the store cannot create the challenge, the caller gets that code, and a retry works once the store is back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { forEachDialect } from './helpers/harness.js';
import { userWithTotp } from './helpers/tfa-flow.js';

forEachDialect('2FA: challenge creation failure', (app) => {
  test('authorize-new-method answers 500 challenge_creation_failed when the challenge cannot be stored; a retry works', async () => {
    const { key } = await userWithTotp(app());
    const db = app().store.db;
    // Make every insert into the challenges table fail, as a store fault would.
    await sql`ALTER TABLE tfa_challenges RENAME TO tfa_challenges_away`.execute(db);
    try {
      const res = await app().request('POST', '/api/v0/tfa/authorize-new-method/', { key, body: { tfa_method: 'totp' } });
      assert.equal(res.status, 500, res.raw);
      assert.deepEqual(Object.keys(res.body).sort(), ['error', 'msg', 'success']);
      assert.equal(res.body.success, false);
      assert.equal(res.body.error, 'challenge_creation_failed');
    } finally {
      await sql`ALTER TABLE tfa_challenges_away RENAME TO tfa_challenges`.execute(db);
    }
    const retry = await app().request('POST', '/api/v0/tfa/authorize-new-method/', { key, body: { tfa_method: 'totp' } });
    assert.equal(retry.status, 200, retry.raw);
    assert.equal(retry.body.success, true);
    assert.equal(typeof retry.body.secret, 'string');
  });
});
