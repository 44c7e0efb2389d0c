// Threat: a route that escapes authentication because its check is attached per route (app.ts adds each route's
// onRequest hook as the route is registered) rather than run as one global hook: the HEAD route Fastify derives from
// every GET is not in `built.routes`, so the sweep of auth.security.test.ts does not reach it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';

forEachDialect('auth route hooks', (app) => {
  test('the HEAD of every authenticated GET route needs a key too', async () => {
    // Offer search alone answers a caller with no credential at all (keyOptional, issue 29 item 1).
    const gets = app().routes.filter((r) => r.method === 'GET' && r.category !== 'public' && r.category !== undefined && !r.customAuth && !r.keyOptional);
    assert.ok(gets.length > 10, 'the sweep sees the GET routes');
    for (const route of gets) {
      const path = route.url.replace(/:[A-Za-z0-9_]+/g, '1').replace(/\*$/, 'x');
      const res = await app().request('HEAD', path, { key: null });
      assert.equal(res.status, 401, `HEAD ${path}: ${res.status}`);
    }
    assert.equal((await app().request('HEAD', '/api/v0/users/current/')).status, 200, 'with a key, HEAD answers');
    // The key-optional GETs still check a key that is sent, on their HEAD too.
    const optional = app().routes.filter((r) => r.method === 'GET' && r.keyOptional);
    assert.ok(optional.length > 0, 'a key-optional GET route exists');
    for (const route of optional) {
      const res = await app().request('HEAD', route.url, { key: 'gpk_not_a_key' });
      assert.equal(res.status, 401, `HEAD ${route.url} with a bad key: ${res.status}`);
    }
  });

  test('public routes answer without a key', async () => {
    // Routes that authenticate by themselves (the agent's machine-key routes) are not public.
    const publicGets = app().routes.filter((r) => r.method === 'GET' && r.category === 'public' && !r.customAuth && !r.url.includes(':'));
    assert.ok(publicGets.length > 0, 'a public GET route exists');
    for (const route of publicGets) {
      const res = await app().request('GET', route.url, { key: null });
      assert.notEqual(res.status, 401, `GET ${route.url}: ${res.raw}`);
    }
  });
});
