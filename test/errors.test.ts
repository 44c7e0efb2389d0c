// Errors (contract §4): one table, every reply `{success: false, error, msg}` as JSON, schema failures naming the
// field, JSON 404/400/413 instead of HTML, and no stack trace or internals in any reply.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, forEachDialect, DIALECTS, type Reply } from './helpers/harness.js';
import { ApiError, ERROR_STATUS } from '../src/platform/errors.js';

/** The spec's error object, exactly: no stack, no internals, JSON with the exact content type. */
function assertErrorReply(res: Reply, status: number, error: string): void {
  assert.equal(res.status, status, res.raw);
  assert.equal(res.headers['content-type'], 'application/json');
  assert.equal(res.body.success, false);
  assert.equal(res.body.error, error);
  assert.equal(typeof res.body.msg, 'string');
  assert.ok(res.body.msg.length > 0);
  assert.doesNotMatch(res.raw, /\bat .+:\d+:\d+|node_modules|\/src\/|stack/i, 'no stack trace or path leaks');
}

test('the error table matches contract §4', () => {
  const contract: Record<string, number> = {
    bad_request: 400,
    auth_error: 401,
    permission_denied: 403,
    not_found: 404,
    offer_unavailable: 410,
    insufficient_credit: 402,
    rate_limited: 429,
    internal_error: 500,
  };
  for (const [code, status] of Object.entries(contract)) assert.equal(ERROR_STATUS[code as keyof typeof ERROR_STATUS], status, code);
  // The spec gives missing_auth_value two statuses; the override carries the 401 one.
  assert.equal(new ApiError('missing_auth_value', 'x', {}, 401).status, 401);
  assert.deepEqual(new ApiError('tfa_locked', 'locked', { fail_count: 3 }).body(), {
    success: false,
    error: 'tfa_locked',
    msg: 'locked',
    fail_count: 3,
  });
});

forEachDialect('errors', (app) => {
  test('an unknown route is a JSON 404, not HTML, with or without a key', async () => {
    for (const key of [undefined, null]) {
      const res = await app().request('GET', '/api/v0/no-such-thing/', { key });
      assertErrorReply(res, 404, 'not_found');
    }
    assertErrorReply(await app().request('POST', '/nope', { body: {} }), 404, 'not_found');
  });

  test('a 404 message never echoes the query string (it may hold ?api_key=)', async () => {
    const res = await app().request('GET', '/api/v0/missing?api_key=gpk_leaky_secret_value');
    assertErrorReply(res, 404, 'not_found');
    assert.doesNotMatch(res.raw, /gpk_leaky_secret_value/);
  });

  test('malformed JSON is a 400 bad_request that says so', async () => {
    const res = await app().request('POST', '/_emu/users', { body: '{"email": "a@b.c",', headers: { 'content-type': 'application/json' } });
    assertErrorReply(res, 400, 'bad_request');
    assert.match(res.body.msg, /JSON/);
  });

  test('a body over the limit is a 413, not a crash', async () => {
    const big = JSON.stringify({ email: 'big@example.com', full_name: 'x'.repeat(1_100_000) });
    assertErrorReply(await app().request('POST', '/_emu/users', { body: big }), 413, 'payload_too_large');
  });

  test('a body that is not JSON is a 415 asking for JSON', async () => {
    const res = await app().request('POST', '/_emu/users', { body: 'email=a@b.c', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    assertErrorReply(res, 415, 'unsupported_media_type');
  });

  test('schema failures name the field', async () => {
    const missing = await app().request('POST', '/_emu/users', { body: {} });
    assertErrorReply(missing, 400, 'bad_request');
    assert.match(missing.body.msg, /email/);

    const wrongType = await app().request('POST', '/_emu/users', { body: { email: 'typed@example.com', is_admin: 'maybe' } });
    assertErrorReply(wrongType, 400, 'bad_request');
    assert.match(wrongType.body.msg, /body\.is_admin/);

    const outOfRange = await app().request('POST', '/_emu/clock/advance', { body: { seconds: -5 } });
    assertErrorReply(outOfRange, 400, 'bad_request');
    assert.match(outOfRange.body.msg, /body\.seconds/);

    const badEnum = await app().request('GET', '/_emu/outbox?channel=fax');
    assertErrorReply(badEnum, 400, 'bad_request');
    assert.match(badEnum.body.msg, /channel/);
  });

  test('an empty JSON body (as clients send on GET and DELETE) is no body, not an error', async () => {
    const empty = await app().request('GET', '/api/v0/users/current', { body: '', headers: { 'content-type': 'application/json' } });
    assert.equal(empty.status, 200);
    const object = await app().request('GET', '/api/v0/users/current', { body: {} });
    assert.equal(object.status, 200);
  });

  test('a missing required body is a 400 naming the body, not a 500', async () => {
    const res = await app().request('POST', '/_emu/users');
    assertErrorReply(res, 400, 'bad_request');
    assert.match(res.body.msg, /body/);
  });
});

for (const dialect of DIALECTS) {
  test(`a fault of the service is a bare 500 internal_error that says nothing of internals [${dialect}]`, async () => {
    const t = await createTestApp(dialect);
    // The database going away under a running app: every query now fails inside the driver.
    await t.store.db.destroy();
    try {
      const res = await t.request('GET', '/api/v0/users/current');
      assertErrorReply(res, 500, 'internal_error');
      assert.equal(res.body.msg, 'internal error');
      assert.deepEqual(Object.keys(res.body).sort(), ['error', 'msg', 'success']);
    } finally {
      await t.app.close();
      await t.close().catch(() => undefined);
    }
  });
}
