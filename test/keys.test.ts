// Behaviour of API keys (contract §3 API keys; spec: Authentication): create shows the secret once, list and show
// never do, delete revokes at once, a key records its last use, documents are checked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { CATEGORIES } from '../src/platform/permissions.js';
import { KEY_TOUCH_INTERVAL_S } from '../src/keys/keys-service.js';

const doc = (...cats: string[]) => ({ api: Object.fromEntries(cats.map((c) => [c, {}])) });
const FULL = doc(...CATEGORIES);

forEachDialect('api keys', (app) => {
  test('create: the record with its secret, once; list and show never carry it', async () => {
    const { api_key } = await app().createUser();
    const created = await app().request('POST', '/api/v0/auth/apikeys/', {
      key: api_key,
      body: { name: 'ci', permissions: doc('misc', 'user_read'), key_params: null },
    });
    assert.equal(created.status, 200, created.raw);
    const k = created.body;
    assert.equal(k.success, true);
    assert.equal(typeof k.id, 'number');
    assert.equal(k.name, 'ci');
    assert.match(k.key, /^gpk_[A-Za-z0-9_-]{40,}$/);
    assert.deepEqual(k.permissions, doc('misc', 'user_read'));
    assert.equal(k.team_id, null);
    assert.equal(k.created_at, app().clock.now());
    assert.equal(k.last_used_at, null);

    const list = await app().request('GET', '/api/v0/auth/apikeys/', { key: api_key });
    assert.equal(list.status, 200);
    const listed = list.body.apikeys.find((x: any) => x.id === k.id);
    assert.deepEqual(Object.keys(listed).sort(), ['created_at', 'id', 'last_used_at', 'name', 'permissions', 'team_id']);
    assert.ok(!list.raw.includes(k.key), 'the secret never appears in a list');

    const shown = await app().request('GET', `/api/v0/auth/apikeys/${k.id}`, { key: api_key });
    assert.equal(shown.status, 200);
    assert.equal(shown.body.key, undefined);
    assert.equal(shown.body.name, 'ci');
    assert.ok(!shown.raw.includes(k.key));

    // The new key works, within its document.
    const me = await app().request('GET', '/api/v0/users/current/', { key: k.key });
    assert.equal(me.status, 200);
  });

  test('without permissions the key gets its creator\'s document; a full key makes a full key', async () => {
    const { api_key } = await app().createUser();
    const full = await app().request('POST', '/api/v0/auth/apikeys/', { key: api_key, body: {} });
    assert.equal(full.status, 200, full.raw);
    assert.equal(full.body.name, null);
    assert.deepEqual(full.body.permissions, FULL);
    const scoped = await app().request('POST', '/api/v0/auth/apikeys/', { key: api_key, body: { permissions: doc('user_read', 'user_write') } });
    const child = await app().request('POST', '/api/v0/auth/apikeys/', { key: scoped.body.key, body: { name: 'child' } });
    assert.equal(child.status, 200, child.raw);
    assert.deepEqual(child.body.permissions, doc('user_read', 'user_write'));
  });

  test('a key never gets more rights than the key that creates it: 403 permission_denied', async () => {
    const { api_key } = await app().createUser();
    const scoped = await app().request('POST', '/api/v0/auth/apikeys/', { key: api_key, body: { permissions: doc('user_read', 'user_write') } });
    const more = await app().request('POST', '/api/v0/auth/apikeys/', { key: scoped.body.key, body: { permissions: doc('user_write', 'billing_read') } });
    assert.equal(more.status, 403);
    assert.equal(more.body.success, false);
    assert.equal(more.body.error, 'permission_denied');
    const fullFromScoped = await app().request('POST', '/api/v0/auth/apikeys/', { key: scoped.body.key, body: { permissions: FULL } });
    assert.equal(fullFromScoped.status, 403);
    const fewer = await app().request('POST', '/api/v0/auth/apikeys/', { key: scoped.body.key, body: { permissions: doc('user_read') } });
    assert.equal(fewer.status, 200);
  });

  test('a malformed document or an unknown category is a 400 bad_request naming the problem', async () => {
    const { api_key } = await app().createUser();
    const cases: [unknown, RegExp][] = [
      [{ api: { instance_read: {}, rocket_launch: {} } }, /unknown category "rocket_launch"/],
      [{ api: [] }, /permissions\.api must be an object/],
      [{ apis: {} }, /unknown top-level key "apis"/],
      [{ api: { misc: true } }, /permissions\.api\.misc must be an object/],
      ['{"api":{}}', /permissions must be an object/],
      [{ api: { instance_read: { 'api.instance.request_logs': { constraints: { id: { eq: 1 } } } } } }, /constraints are not supported/],
    ];
    for (const [permissions, msg] of cases) {
      const res = await app().request('POST', '/api/v0/auth/apikeys/', { key: api_key, body: { permissions } });
      assert.equal(res.status, 400, JSON.stringify(permissions));
      assert.equal(res.body.error, 'bad_request');
      assert.match(res.body.msg, msg);
    }
    const badName = await app().request('POST', '/api/v0/auth/apikeys/', { key: api_key, body: { name: 'x'.repeat(101) } });
    assert.equal(badName.status, 400);
    assert.match(badName.body.msg, /name/);
  });

  test('scoped keys are refused outside their categories with 403 permission_denied', async () => {
    const { api_key } = await app().createUser();
    const k = await app().request('POST', '/api/v0/auth/apikeys/', { key: api_key, body: { permissions: doc('misc') } });
    const res = await app().request('GET', '/api/v0/users/current/', { key: k.body.key });
    assert.equal(res.status, 403);
    assert.deepEqual(Object.keys(res.body).sort(), ['error', 'msg', 'success']);
    assert.equal(res.body.error, 'permission_denied');
    assert.match(res.body.msg, /user_read/);
  });

  test('delete revokes: the next request with that key is 401; show and delete again are 404', async () => {
    const { api_key } = await app().createUser();
    const k = await app().request('POST', '/api/v0/auth/apikeys/', { key: api_key, body: { name: 'temp' } });
    assert.equal((await app().request('GET', '/api/v0/users/current', { key: k.body.key })).status, 200);
    const del = await app().request('DELETE', `/api/v0/auth/apikeys/${k.body.id}/`, { key: api_key, body: {} });
    assert.equal(del.status, 200);
    assert.equal(del.body.success, true);
    const after = await app().request('GET', '/api/v0/users/current', { key: k.body.key });
    assert.equal(after.status, 401);
    assert.equal(after.body.error, 'auth_error');
    assert.equal((await app().request('GET', `/api/v0/auth/apikeys/${k.body.id}`, { key: api_key })).status, 404);
    const again = await app().request('DELETE', `/api/v0/auth/apikeys/${k.body.id}`, { key: api_key });
    assert.equal(again.status, 404);
    assert.equal(again.body.error, 'not_found');
    const list = await app().request('GET', '/api/v0/auth/apikeys', { key: api_key });
    assert.ok(!list.body.apikeys.some((x: any) => x.id === k.body.id));
  });

  test('a key can delete itself; it is refused from then on', async () => {
    const { api_key } = await app().createUser();
    const k = await app().request('POST', '/api/v0/auth/apikeys/', { key: api_key, body: {} });
    assert.equal((await app().request('DELETE', `/api/v0/auth/apikeys/${k.body.id}`, { key: k.body.key })).status, 200);
    assert.equal((await app().request('GET', '/api/v0/auth/apikeys', { key: k.body.key })).status, 401);
  });

  test('last_used_at: recorded on use, written again only after KEY_TOUCH_INTERVAL_S', async () => {
    const { api_key } = await app().createUser();
    const k = await app().request('POST', '/api/v0/auth/apikeys/', { key: api_key, body: { name: 'used' } });
    const t1 = app().clock.now();
    await app().request('GET', '/api/v0/users/current', { key: k.body.key });
    // The touch is written after the reply.
    await app().services.keysService.touchesWritten();
    const shown1 = await app().request('GET', `/api/v0/auth/apikeys/${k.body.id}`, { key: api_key });
    assert.equal(shown1.body.last_used_at, t1);
    await app().advance(KEY_TOUCH_INTERVAL_S / 2);
    await app().request('GET', '/api/v0/users/current', { key: k.body.key });
    await app().services.keysService.touchesWritten();
    assert.equal((await app().request('GET', `/api/v0/auth/apikeys/${k.body.id}`, { key: api_key })).body.last_used_at, t1);
    await app().advance(KEY_TOUCH_INTERVAL_S);
    await app().request('GET', '/api/v0/users/current', { key: k.body.key });
    await app().services.keysService.touchesWritten();
    const shown3 = await app().request('GET', `/api/v0/auth/apikeys/${k.body.id}`, { key: api_key });
    assert.equal(shown3.body.last_used_at, app().clock.now());
  });

  test("another user's key is 404 to show and to delete, and stays valid", async () => {
    const a = await app().createUser();
    const b = await app().createUser();
    const k = await app().request('POST', '/api/v0/auth/apikeys/', { key: a.api_key, body: { name: 'mine' } });
    assert.equal((await app().request('GET', `/api/v0/auth/apikeys/${k.body.id}`, { key: b.api_key })).status, 404);
    const del = await app().request('DELETE', `/api/v0/auth/apikeys/${k.body.id}`, { key: b.api_key });
    assert.equal(del.status, 404);
    assert.equal(del.body.error, 'not_found');
    assert.equal((await app().request('GET', '/api/v0/users/current', { key: k.body.key })).status, 200);
    const list = await app().request('GET', '/api/v0/auth/apikeys', { key: b.api_key });
    assert.ok(!list.body.apikeys.some((x: any) => x.id === k.body.id));
  });

  test('bad ids are 400, not 500', async () => {
    for (const id of ['abc', '0', '-1', '1.5', '99999999999']) {
      const res = await app().request('GET', `/api/v0/auth/apikeys/${id}/`);
      assert.equal(res.status, 400, id);
      assert.equal(res.body.error, 'bad_request');
    }
  });
});
