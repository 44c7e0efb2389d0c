// Threat: cross-site request forgery against the web console's session (issue 15). Another site's page makes the
// browser send a state-changing request carrying the session cookie. Every change authenticated by the cookie must
// carry the X-Gpuplane-Csrf header (which a cross-site form cannot send, and a cross-site script cannot add without
// a CORS preflight this server never grants); Bearer requests are unaffected.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { codeNow, userWithTotp } from './helpers/tfa-flow.js';

let n = 0;
const email = () => `csrf${process.pid}_${n++}@example.com`;
const PASSWORD = 'correct horse battery';
const CSRF = { 'x-gpuplane-csrf': '1' };

forEachDialect('CSRF protection of the session cookie', (app) => {
  async function session() {
    const addr = email();
    const u = await app().createUser({ email: addr, password: PASSWORD });
    const res = await app().request('POST', '/api/v0/auth/login/', { key: null, body: { username: addr, password: PASSWORD, client: 'ui' } });
    const m = /gpuplane_session=([^;]+)/.exec(String(res.headers['set-cookie']));
    assert.ok(m);
    return { cookie: `gpuplane_session=${m[1]}`, key: u.api_key };
  }

  test('a cookie-authenticated POST, PUT or DELETE without the header is 403 csrf_failed and changes nothing', async () => {
    const { cookie, key } = await session();
    const made = await app().request('POST', '/api/v0/auth/apikeys/', { key: null, headers: { cookie }, body: { name: 'forged' } });
    assert.equal(made.status, 403, made.raw);
    assert.equal(made.body.error, 'csrf_failed');
    assert.match(made.body.msg, /x-gpuplane-csrf/);
    const keys = await app().request('GET', '/api/v0/auth/apikeys/', { key });
    assert.ok(!JSON.stringify(keys.body).includes('forged'), 'no key was made');
    const put = await app().request('PUT', '/api/v0/instances/1/', { key: null, headers: { cookie }, body: { label: 'x' } });
    assert.equal(put.body.error, 'csrf_failed');
    const del = await app().request('DELETE', '/api/v0/auth/sessions/1/', { key: null, headers: { cookie } });
    assert.equal(del.body.error, 'csrf_failed');
    const out = await app().request('POST', '/api/v0/auth/logout/', { key: null, headers: { cookie } });
    assert.equal(out.status, 403);
    assert.equal((await app().request('GET', '/api/v0/users/current/', { key: null, headers: { cookie } })).status, 200, 'still signed in');
  });

  test('what a cross-site form can send (urlencoded or text/plain, no custom header) is refused', async () => {
    const { cookie } = await session();
    for (const type of ['application/x-www-form-urlencoded', 'text/plain', 'multipart/form-data; boundary=x']) {
      const r = await app().request('POST', '/api/v0/auth/apikeys/', { key: null, headers: { cookie, 'content-type': type } });
      assert.ok(r.status === 403 || r.status === 415, `${type}: ${r.status} ${r.raw}`);
      assert.notEqual(r.status, 200);
    }
  });

  test('with the header the same change works; reads by cookie need no header', async () => {
    const { cookie } = await session();
    const made = await app().request('POST', '/api/v0/auth/apikeys/', { key: null, headers: { cookie, ...CSRF }, body: { name: 'mine' } });
    assert.equal(made.status, 200, made.raw);
    assert.equal((await app().request('GET', '/api/v0/auth/apikeys/', { key: null, headers: { cookie } })).status, 200);
    assert.equal((await app().request('GET', '/api/v0/tfa/status/', { key: null, headers: { cookie } })).status, 200);
  });

  test('Bearer API-key requests need no header (the vastai client and the CLI are unaffected)', async () => {
    const { key } = await session();
    const made = await app().request('POST', '/api/v0/auth/apikeys/', { key, body: { name: 'cli' } });
    assert.equal(made.status, 200, made.raw);
    // A cookie beside a Bearer key: the key is what authenticates, so no header is needed either.
    const { cookie } = await session();
    const both = await app().request('POST', '/api/v0/auth/apikeys/', { key, headers: { cookie }, body: { name: 'both' } });
    assert.equal(both.status, 200, both.raw);
  });

  test('2FA routes signed in by the cookie are protected the same way', async () => {
    const { cookie } = await session();
    const setup = await app().request('POST', '/api/v0/tfa/totp-setup/', { key: null, headers: { cookie }, body: {} });
    assert.equal(setup.status, 403, setup.raw);
    assert.equal(setup.body.error, 'csrf_failed');
    const ok = await app().request('POST', '/api/v0/tfa/totp-setup/', { key: null, headers: { cookie, ...CSRF }, body: {} });
    assert.equal(ok.status, 200, ok.raw);
  });

  test('the logged-out 2FA login (tfa_secret in the body, no cookie) needs no header', async () => {
    const addr = email();
    const u = await userWithTotp(app(), { email: addr, password: PASSWORD });
    const res = await app().request('POST', '/api/v0/auth/login/', { key: null, body: { username: addr, password: PASSWORD, client: 'ui' } });
    const done = await app().request('POST', '/api/v0/tfa/', { key: null, body: { tfa_method: 'totp', code: codeNow(app(), u.secret), secret: res.body.tfa_secret } });
    assert.equal(done.status, 200, done.raw);
    assert.match(String(done.headers['set-cookie']), /SameSite=Strict/);
  });
});
