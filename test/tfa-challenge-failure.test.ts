// challenge_creation_failed (spec 2FA errors: "Challenge creation failed in authorize-new-method; retry", HTTP 500):
// when the store cannot create the challenge (the emulator's fault `challenge_store_error`), the caller gets that
// code, and a retry works once the fault is used up.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { userWithTotp } from './helpers/tfa-flow.js';

forEachDialect('2FA: challenge creation failure', (app) => {
  test('authorize-new-method answers 500 challenge_creation_failed when the challenge cannot be stored; a retry works', async () => {
    const { key } = await userWithTotp(app());
    const fault = await app().request('POST', '/_emu/faults', { body: { fault: 'challenge_store_error' } });
    assert.equal(fault.status, 200, fault.raw);
    assert.equal(fault.body.remaining, 1);
    const res = await app().request('POST', '/api/v0/tfa/authorize-new-method/', { key, body: { tfa_method: 'totp' } });
    assert.equal(res.status, 500, res.raw);
    assert.deepEqual(Object.keys(res.body).sort(), ['error', 'msg', 'success']);
    assert.equal(res.body.success, false);
    assert.equal(res.body.error, 'challenge_creation_failed');
    const retry = await app().request('POST', '/api/v0/tfa/authorize-new-method/', { key, body: { tfa_method: 'totp' } });
    assert.equal(retry.status, 200, retry.raw);
    assert.equal(retry.body.success, true);
    assert.equal(typeof retry.body.secret, 'string');
  });
});
