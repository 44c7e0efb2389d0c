// The client's listing of one's own templates, `GET /api/v0/users/{id}/templates/` (issue 29 item 3): Vast.ai serves
// it at /users/{user_id}/templates/ and vast.py names it as `/users/0/templates/`; the reply is search's
// `{success, templates}`, here the caller's own templates only, private ones included, newest first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';

const template = (name: string, extra: Record<string, unknown> = {}) => ({
  name, image: 'ubuntu', docker_login_repo: 'registry.example.com', docker_login_user: 'me', docker_login_pass: `${name}-pass`, ...extra,
});

async function create(app: TestApp, key: string, body: Record<string, unknown>) {
  const res = await app.request('POST', '/api/v0/template/', { key, body });
  assert.equal(res.status, 200, res.raw);
  return res.body.template;
}

forEachDialect('a user\'s own templates', (app) => {
  test('0, me, current and the caller\'s own id list the caller\'s templates, private ones too, newest first, and no one else\'s', async () => {
    const a = await app().createUser();
    const b = await app().createUser();
    const mine = [await create(app(), a.api_key, template('a-private', { private: true })), await create(app(), a.api_key, template('a-public', { private: false }))];
    await create(app(), b.api_key, template('b-public', { private: false }));
    for (const ref of ['0', 'me', 'current', String(a.user.id)]) {
      const res = await app().request('GET', `/api/v0/users/${ref}/templates/`, { key: a.api_key });
      assert.equal(res.status, 200, `${ref}: ${res.raw}`);
      assert.equal(res.body.success, true);
      assert.deepEqual(res.body.templates.map((t: any) => t.hash_id), mine.map((t) => t.hash_id).reverse(), ref);
      // The same objects search gives the owner, registry password included.
      assert.deepEqual(res.body.templates[1], mine[0]);
      assert.equal(res.body.templates[1].docker_login_pass, 'a-private-pass');
    }
    const none = await app().createUser();
    assert.deepEqual((await app().request('GET', '/api/v0/users/0/templates/', { key: none.api_key })).body, { success: true, templates: [] });
  });

  test('another user\'s id is 403 permission_denied; an id that is not a number, me or current is a 400 naming it', async () => {
    const a = await app().createUser();
    const b = await app().createUser();
    await create(app(), b.api_key, template('b-secret', { private: true }));
    const theirs = await app().request('GET', `/api/v0/users/${b.user.id}/templates/`, { key: a.api_key });
    assert.equal(theirs.status, 403, theirs.raw);
    assert.equal(theirs.body.error, 'permission_denied');
    assert.doesNotMatch(theirs.raw, /b-secret/);
    const bad = await app().request('GET', '/api/v0/users/abc/templates/', { key: a.api_key });
    assert.equal(bad.status, 400, bad.raw);
    assert.equal(bad.body.error, 'bad_request');
    assert.match(bad.body.msg, /params\.id/);
  });

  test('it needs user_read, as template search does; no key is 401', async () => {
    const scoped = async (cats: string[]) =>
      (await app().request('POST', '/api/v0/auth/apikeys/', { body: { name: 'tl', permissions: { api: Object.fromEntries(cats.map((c) => [c, {}])) } } })).body.key;
    assert.equal((await app().request('GET', '/api/v0/users/0/templates/', { key: await scoped(['user_read']) })).status, 200);
    const denied = await app().request('GET', '/api/v0/users/0/templates/', { key: await scoped(['instance_read', 'user_write']) });
    assert.equal(denied.status, 403);
    assert.match(denied.body.msg, /user_read/);
    assert.equal((await app().request('GET', '/api/v0/users/0/templates/', { key: null })).status, 401);
  });
});
