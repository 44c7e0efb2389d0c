// `vastai reset api-key` (`PUT /api/v0/commands/reset_apikey/`): the key of the request stops working at once and a
// replacement with the same name and rights is shown once; two resets racing with one key make one replacement.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';

forEachDialect('API key reset', (app) => {
  test('the old key is refused at once; the new one works, with the same name and rights', async () => {
    const u = await app().createUser();
    const made = await app().request('POST', '/api/v0/auth/apikeys/', {
      key: u.api_key,
      body: { name: 'ci', permissions: { api: { user_read: {}, user_write: {} } } },
    });
    const old = made.body.key as string;
    const r = await app().request('PUT', '/api/v0/commands/reset_apikey/', { key: old, body: { client_id: 'me' } });
    assert.equal(r.status, 200, r.raw);
    assert.equal(r.body.success, true);
    assert.match(r.body.new_api_key, /^gpk_/);
    assert.notEqual(r.body.new_api_key, old);
    const refused = await app().request('GET', '/api/v0/users/current', { key: old });
    assert.equal(refused.status, 401);
    assert.equal((await app().request('GET', '/api/v0/users/current', { key: r.body.new_api_key })).status, 200);
    const shown = await app().request('GET', `/api/v0/auth/apikeys/${r.body.id}/`, { key: u.api_key });
    assert.equal(shown.body.name, 'ci');
    assert.deepEqual(Object.keys(shown.body.permissions.api).sort(), ['user_read', 'user_write']);
    // Still bounded: no instance rights.
    assert.equal((await app().request('GET', '/api/v0/instances/', { key: r.body.new_api_key })).status, 403);
    // The user's other keys are untouched.
    assert.equal((await app().request('GET', '/api/v0/users/current', { key: u.api_key })).status, 200);
  });

  test('two resets racing with one key: one replacement, the other refused', async () => {
    const u = await app().createUser();
    const k = (await app().request('POST', '/api/v0/auth/apikeys/', { key: u.api_key, body: { name: 'race' } })).body.key;
    const [a, b] = await Promise.all([
      app().request('PUT', '/api/v0/commands/reset_apikey/', { key: k, body: { client_id: 'me' } }),
      app().request('PUT', '/api/v0/commands/reset_apikey/', { key: k, body: { client_id: 'me' } }),
    ]);
    assert.deepEqual([a.status, b.status].sort(), [200, 401]);
    const live = (await app().request('GET', '/api/v0/auth/apikeys/', { key: u.api_key })).body.apikeys.filter((x: any) => x.name === 'race');
    assert.equal(live.length, 1);
  });

  // vast.py's other path for the command (issue 29 item 3), with its `?owner=me`: the same reset, the same reply.
  test('PUT /api/v0/users/current/reset-apikey/?owner=me resets the key of the request as /commands/reset_apikey/ does', async () => {
    const u = await app().createUser();
    const old = (await app().request('POST', '/api/v0/auth/apikeys/', { key: u.api_key, body: { name: 'older path', permissions: { api: { user_read: {}, user_write: {} } } } })).body.key;
    const r = await app().request('PUT', '/api/v0/users/current/reset-apikey/?owner=me', { key: old, body: { client_id: 'me' } });
    assert.equal(r.status, 200, r.raw);
    assert.deepEqual(Object.keys(r.body).sort(), ['id', 'msg', 'new_api_key', 'success']);
    assert.equal(r.body.success, true);
    assert.match(r.body.new_api_key, /^gpk_/);
    assert.equal((await app().request('GET', '/api/v0/users/current', { key: old })).status, 401);
    assert.equal((await app().request('GET', '/api/v0/users/current', { key: r.body.new_api_key })).status, 200);
    const shown = await app().request('GET', `/api/v0/auth/apikeys/${r.body.id}/`, { key: u.api_key });
    assert.equal(shown.body.name, 'older path');
    assert.deepEqual(Object.keys(shown.body.permissions.api).sort(), ['user_read', 'user_write']);
    const other = await app().createUser();
    const refused = await app().request('PUT', '/api/v0/users/current/reset-apikey/', { key: u.api_key, body: { client_id: other.user.id } });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.error, 'permission_denied');
  });

  test('another user\'s id as client_id is refused, and nothing changes', async () => {
    const u = await app().createUser();
    const other = await app().createUser();
    const r = await app().request('PUT', '/api/v0/commands/reset_apikey/', { key: u.api_key, body: { client_id: other.user.id } });
    assert.equal(r.status, 403);
    assert.equal(r.body.error, 'permission_denied');
    assert.equal((await app().request('GET', '/api/v0/users/current', { key: u.api_key })).status, 200);
  });
});
