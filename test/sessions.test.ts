// The UI session (issue 15): the cookie's attributes (HttpOnly, SameSite=Strict, Secure over https, X-Forwarded-Proto
// only when GPUPLANE_TRUST_PROXY is on), listing and revoking sessions, and their expiry.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';

let n = 0;
const email = () => `sessions${process.pid}_${n++}@example.com`;
const PASSWORD = 'correct horse battery';
const CSRF = { 'x-gpuplane-csrf': '1' };

async function uiLogin(app: TestApp, addr: string, headers: Record<string, string> = {}) {
  const res = await app.request('POST', '/api/v0/auth/login/', { key: null, body: { username: addr, password: PASSWORD, client: 'ui' }, headers });
  assert.equal(res.status, 200, res.raw);
  const raw = String(res.headers['set-cookie']);
  const m = /gpuplane_session=([^;]+)/.exec(raw);
  assert.ok(m, raw);
  return { raw, cookie: `gpuplane_session=${m[1]}` };
}

forEachDialect('sessions: cookie attributes over http and through a proxy that is not trusted', (app) => {
  test('HttpOnly, SameSite=Strict, Path=/, a 7-day Max-Age; no Secure over http, even if a client claims https', async () => {
    const addr = email();
    await app().createUser({ email: addr, password: PASSWORD });
    const { raw } = await uiLogin(app(), addr, { 'x-forwarded-proto': 'https' });
    assert.match(raw, /; HttpOnly/);
    assert.match(raw, /; SameSite=Strict/);
    assert.match(raw, /; Path=\//);
    assert.match(raw, /; Max-Age=604800/);
    assert.doesNotMatch(raw, /Secure/);
  });
});

forEachDialect('sessions: behind a trusted TLS proxy', (app) => {
  test('X-Forwarded-Proto: https makes the cookie Secure; http keeps it plain', async () => {
    const addr = email();
    await app().createUser({ email: addr, password: PASSWORD });
    assert.match((await uiLogin(app(), addr, { 'x-forwarded-proto': 'https' })).raw, /; Secure/);
    assert.doesNotMatch((await uiLogin(app(), addr, { 'x-forwarded-proto': 'http' })).raw, /Secure/);
  });
}, { config: { GPUPLANE_TRUST_PROXY: 'true' } });

forEachDialect('sessions: served at an https public URL', (app) => {
  test('the cookie is Secure, and so is its removal at logout', async () => {
    const addr = email();
    await app().createUser({ email: addr, password: PASSWORD });
    const { raw, cookie } = await uiLogin(app(), addr);
    assert.match(raw, /; Secure/);
    const out = await app().request('POST', '/api/v0/auth/logout/', { key: null, headers: { cookie, ...CSRF } });
    assert.equal(out.status, 200, out.raw);
    assert.match(String(out.headers['set-cookie']), /Max-Age=0.*; Secure/);
  });
}, { config: { GPUPLANE_PUBLIC_URL: 'https://gpu.example.com' } });

forEachDialect('sessions: list and revoke', (app) => {
  test('GET /auth/sessions/ lists my live sessions, the current one marked; not other users\' nor API keys', async () => {
    const addr = email();
    const { api_key } = await app().createUser({ email: addr, password: PASSWORD });
    await app().createUser({ email: email(), password: PASSWORD });
    const cli = await app().request('POST', '/api/v0/auth/login/', { key: null, body: { username: addr, password: PASSWORD, client: 'cli' } });
    await app().advance(10);
    const { cookie } = await uiLogin(app(), addr);
    const list = await app().request('GET', '/api/v0/auth/sessions/', { key: null, headers: { cookie } });
    assert.equal(list.status, 200, list.raw);
    assert.deepEqual(list.body.sessions.map((s: any) => [s.client, s.current]), [['ui', true], ['cli', false]]);
    const [ui] = list.body.sessions;
    assert.equal(ui.expires_at - ui.created_at, 7 * 86400);
    // With an API key: the same sessions, none current.
    const byKey = await app().request('GET', '/api/v0/auth/sessions/', { key: api_key });
    assert.deepEqual(byKey.body.sessions.map((s: any) => s.current), [false, false]);
    assert.equal((await app().request('GET', '/api/v0/users/current/', { key: cli.body.session_key })).status, 200);
  });

  test('DELETE /auth/sessions/{id}/ ends that session at once; another user\'s or an ended one is 404 not_found', async () => {
    const addr = email();
    await app().createUser({ email: addr, password: PASSWORD });
    const other = await app().createUser({ email: email(), password: PASSWORD });
    const cli = await app().request('POST', '/api/v0/auth/login/', { key: null, body: { username: addr, password: PASSWORD, client: 'cli' } });
    const { cookie } = await uiLogin(app(), addr);
    const { sessions } = (await app().request('GET', '/api/v0/auth/sessions/', { key: null, headers: { cookie } })).body;
    const cliId = sessions.find((s: any) => s.client === 'cli').id;
    const theirs = await app().request('DELETE', `/api/v0/auth/sessions/${cliId}/`, { key: other.api_key });
    assert.equal(theirs.status, 404);
    assert.equal(theirs.body.error, 'not_found');
    const del = await app().request('DELETE', `/api/v0/auth/sessions/${cliId}/`, { key: null, headers: { cookie, ...CSRF } });
    assert.equal(del.status, 200, del.raw);
    assert.equal(del.headers['set-cookie'], undefined, 'another session: this cookie stays');
    assert.equal((await app().request('GET', '/api/v0/users/current/', { key: cli.body.session_key })).status, 401);
    const again = await app().request('DELETE', `/api/v0/auth/sessions/${cliId}/`, { key: null, headers: { cookie, ...CSRF } });
    assert.equal(again.status, 404);
    // Ending the session in use clears its cookie, and the cookie no longer works.
    const uiId = sessions.find((s: any) => s.client === 'ui').id;
    const self = await app().request('DELETE', `/api/v0/auth/sessions/${uiId}/`, { key: null, headers: { cookie, ...CSRF } });
    assert.equal(self.status, 200);
    assert.match(String(self.headers['set-cookie']), /gpuplane_session=;.*Max-Age=0/);
    assert.equal((await app().request('GET', '/api/v0/users/current/', { key: null, headers: { cookie } })).status, 401);
    const bad = await app().request('DELETE', '/api/v0/auth/sessions/abc/', { key: other.api_key });
    assert.equal(bad.status, 400);
  });

  test('a UI session expires after 7 days: the cookie stops working and the list drops it', async () => {
    const addr = email();
    const { api_key } = await app().createUser({ email: addr, password: PASSWORD });
    const { cookie } = await uiLogin(app(), addr);
    await app().advance(7 * 86400 - 60);
    assert.equal((await app().request('GET', '/api/v0/users/current/', { key: null, headers: { cookie } })).status, 200);
    await app().advance(61);
    const me = await app().request('GET', '/api/v0/users/current/', { key: null, headers: { cookie } });
    assert.equal(me.status, 401);
    assert.equal(me.body.error, 'auth_error');
    assert.deepEqual((await app().request('GET', '/api/v0/auth/sessions/', { key: api_key })).body.sessions, []);
  });

  test('without a key or cookie the session routes are 401 auth_error', async () => {
    for (const [m, u] of [['GET', '/api/v0/auth/sessions/'], ['DELETE', '/api/v0/auth/sessions/1/']] as const) {
      const r = await app().request(m, u, { key: null });
      assert.equal(r.status, 401, `${m} ${u}`);
      assert.equal(r.body.error, 'auth_error');
    }
  });
});
