// Offer search without a key (issue 29 item 1): Vast.ai serves `POST /api/v0/bundles/` and `PUT /api/v0/search/asks/`
// to anyone, and dstack's offer catalogue (gpuhunt) sends no key, so gpuplane answers them (and the older clients'
// `GET /api/v0/bundles/?q=`) without one by default, counted per client address, with the same reply a key gets.
// A key that is sent is checked as before; GPUPLANE_OFFER_SEARCH_REQUIRES_KEY=true makes all three need one again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';

const FILTER = { num_gpus: { gte: 1 }, order: [['dph_total', 'asc']], limit: 5 };

/** The three offer-search routes, called as a client would: the same filter each way. */
const SEARCHES = [
  { method: 'POST', url: '/api/v0/bundles/', payload: FILTER },
  { method: 'PUT', url: '/api/v0/search/asks/', payload: { select_cols: ['*'], q: FILTER } },
  { method: 'GET', url: `/api/v0/bundles/?q=${encodeURIComponent(JSON.stringify(FILTER))}`, payload: undefined },
] as const;

/** A request with no credential at all, from `address` (app.inject sets the socket's remote address). */
async function anonymous(t: TestApp, s: (typeof SEARCHES)[number], address = '127.0.0.1') {
  const res = await t.app.inject({
    method: s.method,
    url: s.url,
    remoteAddress: address,
    ...(s.payload === undefined ? {} : { payload: JSON.stringify(s.payload), headers: { 'content-type': 'application/json' } }),
  });
  return { status: res.statusCode, raw: res.body, body: JSON.parse(res.body), headers: res.headers };
}

forEachDialect('offer search without a key', (app) => {
  test('each search route answers without a key, with exactly the reply a key gets', async () => {
    for (const s of SEARCHES) {
      const anon = await anonymous(app(), s, '198.51.100.1');
      assert.equal(anon.status, 200, `${s.method} ${s.url}: ${anon.raw}`);
      assert.ok(anon.body.offers.length > 0 && anon.body.offers.length <= 5, `${s.method} ${s.url}`);
      const keyed = await app().request(s.method, s.url, { body: s.payload });
      assert.equal(keyed.status, 200);
      assert.equal(anon.raw, keyed.raw, `${s.method} ${s.url}: the same offers, prices and fields`);
    }
  });

  test('a key that is sent is checked as before: a bad key is 401, a key without misc 403', async () => {
    const scoped = await app().request('POST', '/api/v0/auth/apikeys/', { body: { name: 'no misc', permissions: { api: { user_read: {} } } } });
    for (const s of SEARCHES) {
      const bad = await app().request(s.method, s.url, { key: 'gpk_not_a_key_of_anyone_0123456789', body: s.payload });
      assert.equal(bad.status, 401, `${s.method} ${s.url}`);
      assert.equal(bad.body.error, 'auth_error');
      const malformed = await app().request(s.method, s.url, { key: null, headers: { authorization: 'Basic abc' }, body: s.payload });
      assert.equal(malformed.status, 401, `${s.method} ${s.url}: a malformed header is a credential, refused`);
      const denied = await app().request(s.method, s.url, { key: scoped.body.key, body: s.payload });
      assert.equal(denied.status, 403, `${s.method} ${s.url}`);
      assert.equal(denied.body.error, 'permission_denied');
    }
  });

  test('past the per-minute limit an address gets 429 rate_limited with Retry-After; others, keys and the next minute do not', async () => {
    const [bundles, asks, old] = SEARCHES;
    // The three routes share one count per address (3 a minute in this app).
    assert.equal((await anonymous(app(), bundles, '203.0.113.7')).status, 200);
    assert.equal((await anonymous(app(), asks, '203.0.113.7')).status, 200);
    assert.equal((await anonymous(app(), old, '203.0.113.7')).status, 200);
    const refused = await anonymous(app(), bundles, '203.0.113.7');
    assert.equal(refused.status, 429, refused.raw);
    assert.deepEqual(Object.keys(refused.body).sort(), ['error', 'msg', 'success']);
    assert.equal(refused.body.error, 'rate_limited');
    assert.match(refused.body.msg, /3 a minute/);
    const wait = Number(refused.headers['retry-after']);
    assert.ok(Number.isInteger(wait) && wait >= 1 && wait <= 60, `Retry-After ${refused.headers['retry-after']}`);
    // Another address is counted on its own; a key is never counted.
    assert.equal((await anonymous(app(), bundles, '203.0.113.8')).status, 200);
    assert.equal((await app().request('POST', '/api/v0/bundles/', { body: FILTER })).status, 200);
    // Once the minute has passed, the address is served again.
    await app().advance(wait);
    assert.equal((await anonymous(app(), bundles, '203.0.113.7')).status, 200);
  });
}, { config: { GPUPLANE_ANONYMOUS_SEARCHES_PER_MINUTE: '3' } });

forEachDialect('offer search with GPUPLANE_OFFER_SEARCH_REQUIRES_KEY=true', (app) => {
  test('no key is 401 auth_error on each search route; a key searches as ever', async () => {
    for (const s of SEARCHES) {
      const anon = await anonymous(app(), s);
      assert.equal(anon.status, 401, `${s.method} ${s.url}: ${anon.raw}`);
      assert.equal(anon.body.error, 'auth_error');
      assert.equal((await app().request(s.method, s.url, { body: s.payload })).status, 200);
    }
    assert.ok(app().routes.every((r) => !r.keyOptional), 'no route is served without a key');
  });
}, { config: { GPUPLANE_OFFER_SEARCH_REQUIRES_KEY: 'true' } });
