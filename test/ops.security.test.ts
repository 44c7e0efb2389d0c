// Threat: the metrics endpoint as a way in or a leak — scraping it without GPUPLANE_METRICS_TOKEN when one is set
// (no header, a wrong or shorter token, the token in the URL, an admin's API key instead), and URLs an attacker
// chooses (secrets in a query string, endless distinct paths) ending up in label values: a leak, and unbounded series
// that exhaust the server's and Prometheus's memory. The public probes must not reveal the database's error text.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, DIALECTS, forEachDialect } from './helpers/harness.js';
import { parseExposition } from './helpers/metrics.js';

const TOKEN = 'metrics-scrape-token-5b1f0c9e';

forEachDialect('metrics behind GPUPLANE_METRICS_TOKEN', (app) => {
  test('without the right token: 401 auth_error, with a Bearer challenge and no metric in the body', async () => {
    const attempts: [string, Record<string, string>][] = [
      ['no header', {}],
      ['a wrong token', { authorization: 'Bearer metrics-scrape-token-5b1f0c9X' }],
      ['a prefix of the token', { authorization: `Bearer ${TOKEN.slice(0, -1)}` }],
      ['the token and more', { authorization: `Bearer ${TOKEN}x` }],
      ['another scheme', { authorization: `Basic ${Buffer.from(`x:${TOKEN}`).toString('base64')}` }],
      ['the bare token', { authorization: TOKEN }],
      ["the owner's (an admin's) API key", { authorization: `Bearer ${app().ownerKey}` }],
    ];
    for (const [what, headers] of attempts) {
      const res = await app().request('GET', '/metrics', { key: null, headers });
      assert.equal(res.status, 401, what);
      assert.equal(res.body.success, false, what);
      assert.equal(res.body.error, 'auth_error', what);
      assert.equal(res.headers['www-authenticate'], 'Bearer realm="metrics"', what);
      assert.doesNotMatch(res.raw, /gpuplane_|process_/, what);
    }
    for (const url of [`/metrics?token=${TOKEN}`, `/metrics?api_key=${TOKEN}`]) {
      assert.equal((await app().request('GET', url, { key: null })).status, 401, `${url}: a token in the URL is not accepted`);
    }
  });

  test('with the token: the metrics', async () => {
    const res = await app().request('GET', '/metrics', { key: null, headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(res.status, 200, res.raw);
    assert.match(res.raw, /^gpuplane_database_up 1$/m);
  });

  test('the probes stay open: they reveal no figure', async () => {
    assert.equal((await app().request('GET', '/healthz', { key: null })).status, 200);
    assert.equal((await app().request('GET', '/readyz', { key: null })).status, 200);
  });
}, { config: { GPUPLANE_METRICS_TOKEN: TOKEN } });

forEachDialect('metrics labels', (app) => {
  test('URLs chosen by a client never become label values: one series for every unmatched path, no query string', async () => {
    const secret = 'gpk_SecretInTheQueryString0123456789';
    const paths = Array.from({ length: 40 }, (_, i) => `/probe-${i}-${secret.slice(4, 12)}/x`);
    for (const p of paths) assert.equal((await app().request('GET', p, { key: null })).status, 404);
    assert.equal((await app().request('GET', `/api/v0/users/current?api_key=${secret}`)).status, 200);
    // A missing instance reads as {instances: null} with 200, as vast.py expects (issue 29 item 2).
    assert.equal((await app().request('GET', `/api/v0/instances/123456/?api_key=${secret}`)).status, 200);

    const res = await app().request('GET', '/metrics', { key: null });
    assert.equal(res.status, 200);
    assert.ok(!res.raw.includes(secret.slice(4, 12)), 'nothing of the URLs is in the metrics');
    assert.ok(!res.raw.includes('api_key'));
    const samples = parseExposition(res.raw).filter((s) => s.name === 'gpuplane_http_requests_total');
    const routes = new Set(samples.map((s) => s.labels.route));
    assert.ok(routes.has('unmatched'));
    assert.ok(routes.has('/api/v0/instances/:id/'));
    assert.equal(samples.filter((s) => s.labels.route === 'unmatched').length, 1, 'forty paths, one series');
    assert.equal(samples.find((s) => s.labels.route === 'unmatched')!.value, paths.length);
  });
});

for (const dialect of DIALECTS) {
  test(`[${dialect}] /readyz does not show the database's own error text to the public`, async () => {
    const t = await createTestApp(dialect);
    try {
      await t.store.db.destroy();
      const res = await t.request('GET', '/readyz', { key: null });
      assert.equal(res.status, 503);
      assert.doesNotMatch(res.body.msg, /destroy|driver|kysely|sqlite:|postgres:|search_path|127\.0\.0\.1/i);
    } finally {
      await t.close().catch(() => undefined);
    }
  });
}
