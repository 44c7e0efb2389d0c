// Every route belongs to exactly one permission category (spec: Authentication; contract §4): a table-driven sweep
// over the live route registry, so routes that other features add are covered as they land.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { CATEGORIES } from '../src/platform/permissions.js';
import type { RouteInfo } from '../src/app.js';

const doc = (cats: readonly string[]) => ({ api: Object.fromEntries(cats.map((c) => [c, {}])) });

/**
 * A concrete URL for a route pattern: ids that match nothing, so no sweep request changes existing data. The event
 * stream is given a timeout: without one it stays open until the client leaves.
 */
const concrete = (url: string) =>
  url.replace(/:(\w+)/g, '999999').replace(/\*$/, '') + (url === '/api/v0/instances/events/' ? '?timeout=0.1' : '');

async function scopedKey(t: TestApp, cats: readonly string[]): Promise<string> {
  const res = await t.request('POST', '/api/v0/auth/apikeys/', { body: { name: 'sweep', permissions: doc(cats) } });
  assert.equal(res.status, 200, res.raw);
  return res.body.key;
}

/** Routes that need a key and a category: every one but public routes and the docs' static files. */
const guarded = (t: TestApp): RouteInfo[] =>
  t.routes.filter((r) => r.category !== undefined && r.category !== 'public');

forEachDialect('permission categories', (app) => {
  test('every API route declares exactly one known category (or public)', () => {
    const known = new Set<string>([...CATEGORIES, 'public']);
    const api = app().routes.filter((r) => r.url.startsWith('/api/') || r.url.startsWith('/_emu/'));
    assert.ok(api.length > 0);
    for (const r of api) assert.ok(r.category !== undefined && known.has(r.category), `${r.method} ${r.url}: ${r.category}`);
  });

  test('the OpenAPI document lists the categories and each operation\'s category', async () => {
    const res = await app().request('GET', '/api/v0/openapi.json', { key: null });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body['x-permission-categories'], [...CATEGORIES]);
    for (const r of app().routes.filter((x) => x.url.startsWith('/api/v0/') && x.url !== '/api/v0/openapi.json')) {
      const path = r.url.replace(/:(\w+)/g, '{$1}');
      const op = res.body.paths[path]?.[r.method.toLowerCase()];
      assert.ok(op, `${r.method} ${path} is in the document`);
      assert.equal(op['x-permission-category'], r.category, `${r.method} ${path}`);
    }
  });

  test('template search needs user_read (spec)', async () => {
    const search = app().routes.find((r) => r.method === 'GET' && r.url === '/api/v0/template/');
    assert.ok(search, 'GET /api/v0/template/ is registered');
    assert.equal(search.category, 'user_read');
  });

  test('each route: a key with its category is not refused; a key with every other category gets 403', async () => {
    const routes = guarded(app());
    assert.ok(routes.length >= 10, `only ${routes.length} guarded routes`);
    for (const r of routes) {
      const url = concrete(r.url);
      const body = ['GET', 'HEAD'].includes(r.method) ? undefined : {};
      const withKey = await scopedKey(app(), [r.category!]);
      const others = CATEGORIES.filter((c) => c !== r.category);
      const withoutKey = await scopedKey(app(), others);

      const denied = await app().request(r.method, url, { key: withoutKey, body });
      assert.equal(denied.status, 403, `${r.method} ${r.url} without ${r.category}: ${denied.raw}`);
      if (!r.customAuth) {
        assert.equal(denied.body.error, 'permission_denied', `${r.method} ${r.url}`);
        assert.ok(denied.body.msg.includes(r.category!), `${r.method} ${r.url}: ${denied.body.msg}`);
      }

      const allowed = await app().request(r.method, url, { key: withKey, body });
      // A route may still answer 403 for its own rules (e.g. 2FA's authorization_required), never for the category.
      assert.ok(
        !(allowed.status === 403 && String(allowed.body?.msg).includes(`${r.category} permission`)),
        `${r.method} ${r.url} with ${r.category}: ${allowed.raw}`,
      );
      assert.notEqual(allowed.status, 401, `${r.method} ${r.url}`);
      // 503 service_unavailable is a route's deliberate answer that this server lacks something (e.g. copy routes).
      const deliberate = allowed.status === 503 && allowed.body?.error === 'service_unavailable';
      assert.ok(allowed.status < 500 || deliberate, `${r.method} ${r.url} with ${r.category}: ${allowed.status} ${allowed.raw}`);
    }
  });

  test('no key is 401 auth_error on every guarded route but offer search; a revoked key is 401 on every one', async () => {
    const k = await app().request('POST', '/api/v0/auth/apikeys/', { body: { name: 'soon revoked' } });
    await app().request('DELETE', `/api/v0/auth/apikeys/${k.body.id}`);
    // Offer search answers without a key (issue 29 item 1, as Vast.ai's does; test/offers-anonymous.test.ts): exactly
    // these routes, and only for a caller who sends no credential at all.
    const anonymous = guarded(app()).filter((x) => x.keyOptional).map((x) => `${x.method} ${x.url}`).sort();
    assert.deepEqual(anonymous, ['GET /api/v0/bundles/', 'POST /api/v0/bundles/', 'PUT /api/v0/search/asks/']);
    for (const r of guarded(app()).filter((x) => !x.customAuth)) {
      const url = concrete(r.url);
      // A search without a key sends its filter as a client would (an empty one: every offer).
      const none = await app().request(r.method, url, { key: null, body: r.keyOptional && r.method !== 'GET' ? {} : undefined });
      if (r.keyOptional) {
        assert.equal(none.status, 200, `${r.method} ${r.url} without a key: ${none.raw.slice(0, 200)}`);
        assert.ok(Array.isArray(none.body.offers), `${r.method} ${r.url}`);
      } else {
        assert.equal(none.status, 401, `${r.method} ${r.url}`);
        assert.equal(none.body.error, 'auth_error');
      }
      const revoked = await app().request(r.method, url, { key: k.body.key });
      assert.equal(revoked.status, 401, `${r.method} ${r.url}`);
    }
  });
});

// The document algebra itself, without HTTP.
import { intersect, isSubset, parsePermissionDoc, categoriesOf } from '../src/platform/permissions.js';

test('intersect: what both grant; null (full access) is the identity', () => {
  assert.deepEqual(intersect(doc(['misc', 'user_read']) as any, doc(['user_read', 'team_read']) as any), doc(['user_read']));
  assert.deepEqual(intersect(null, doc(['misc']) as any), doc(['misc']));
  assert.equal(intersect(null, null), null);
  assert.deepEqual(categoriesOf(intersect(doc(['misc']) as any, doc(['team_read']) as any)), []);
});

test('isSubset: a full document only inside full access; scoped inside wider', () => {
  assert.equal(isSubset(doc(['misc']) as any, null), true);
  assert.equal(isSubset(null, doc(['misc']) as any), false);
  assert.equal(isSubset(null, doc(CATEGORIES) as any), true);
  assert.equal(isSubset(doc(['misc', 'billing_write']) as any, doc(['misc']) as any), false);
  assert.equal(isSubset(doc([]) as any, doc([]) as any), true);
});

test('parsePermissionDoc: keeps only known categories with empty objects; names the problem otherwise', () => {
  assert.deepEqual(parsePermissionDoc({ api: { misc: {} } }), { api: { misc: {} } });
  assert.equal(typeof parsePermissionDoc(null), 'string');
  assert.match(String(parsePermissionDoc(JSON.parse('{"api": {"__proto__": {}}}'))), /unknown category "__proto__"/);
  assert.match(String(parsePermissionDoc({ api: { constructor: {} } })), /unknown category/);
  assert.match(String(parsePermissionDoc({ api: { misc: { x: 1 } } })), /constraints are not supported/);
});
