// Behaviour of sign-up, password login, the 2FA login (POST /api/v0/tfa/), sessions and logout (contract §3).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { codeNow, lastCode, newPhone, userWithTotp } from './helpers/tfa-flow.js';

let n = 0;
const email = () => `login${process.pid}_${n++}@example.com`;
const PASSWORD = 'correct horse battery';

function cookieOf(res: { headers: Record<string, unknown> }): string {
  const raw = String(res.headers['set-cookie']);
  const m = /gpuplane_session=([^;]*)/.exec(raw);
  assert.ok(m, `no session cookie in ${raw}`);
  return `gpuplane_session=${m[1]}`;
}

async function login(app: TestApp, username: string, client?: 'cli' | 'ui', password = PASSWORD) {
  return app.request('POST', '/api/v0/auth/login/', { key: null, body: { username, password, ...(client ? { client } : {}) } });
}

forEachDialect('login and sessions', (app) => {
  test('sign-up e-mails a code; login waits for verification; the code verifies the address', async () => {
    const addr = email();
    const res = await app().request('POST', '/api/v0/users/', { key: null, body: { email: addr, password: PASSWORD, full_name: 'Grace' } });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.user.email_verified_at, null);
    assert.equal(res.body.user.tfa_status, 'disabled');
    const early = await login(app(), addr);
    assert.equal(early.status, 400);
    assert.equal(early.body.error, 'email_not_verified');
    const code = await lastCode(app(), addr, 'email');
    const wrong = await app().request('POST', '/api/v0/users/verify-email/', { key: null, body: { email: addr, code: code === '000000' ? '111111' : '000000' } });
    assert.equal(wrong.status, 400);
    const ok = await app().request('POST', '/api/v0/users/verify-email/', { key: null, body: { email: addr, code } });
    assert.equal(ok.status, 200, ok.raw);
    const s = await login(app(), addr, 'cli');
    assert.equal(s.status, 200, s.raw);
    assert.equal(s.body.full_name, 'Grace');
    assert.notEqual(s.body.email_verified_at, null);
    const dup = await app().request('POST', '/api/v0/users/', { key: null, body: { email: addr, password: PASSWORD } });
    assert.equal(dup.status, 409);
    const weak = await app().request('POST', '/api/v0/users/', { key: null, body: { email: email(), password: 'short' } });
    assert.equal(weak.status, 400);
    assert.equal(weak.body.error, 'bad_request');
  });

  test('the verification e-mail tells a person what to do (the console\'s login page, the CLI), not a route to POST', async () => {
    const addr = email();
    await app().request('POST', '/api/v0/users/', { key: null, body: { email: addr, password: PASSWORD } });
    const mail = (await app().request('GET', '/_emu/outbox', { query: { to: addr, channel: 'email' } })).body.messages.at(-1);
    assert.doesNotMatch(mail.text, /POST|\/api\/v0\//);
    assert.ok(mail.text.includes(`${app().config.publicUrl}/login`), mail.text);
    assert.ok(mail.text.includes(`gpuplane verify email --email ${addr} --code ${mail.code}`), mail.text);
  });

  test('CLI login without 2FA: session_key works as a Bearer key everywhere; logout revokes it', async () => {
    const addr = email();
    await app().createUser({ email: addr, password: PASSWORD });
    const res = await login(app(), addr, 'cli');
    assert.equal(res.status, 200);
    assert.match(res.body.session_key, /^gps_/);
    assert.equal(res.headers['set-cookie'], undefined);
    const me = await app().request('GET', '/api/v0/users/current/', { key: res.body.session_key });
    assert.equal(me.status, 200);
    assert.equal(me.body.email, addr);
    const out = await app().request('POST', '/api/v0/auth/logout/', { key: res.body.session_key });
    assert.equal(out.status, 200);
    const after = await app().request('GET', '/api/v0/users/current/', { key: res.body.session_key });
    assert.equal(after.status, 401);
  });

  test('logout with an API key (not a session) is refused and the key keeps working', async () => {
    const { api_key } = await app().createUser();
    const out = await app().request('POST', '/api/v0/auth/logout/', { key: api_key });
    assert.equal(out.status, 400);
    assert.equal((await app().request('GET', '/api/v0/users/current/', { key: api_key })).status, 200);
  });

  test('UI login: an HttpOnly cookie, no session_key in the body; the cookie authenticates; logout clears it', async () => {
    const addr = email();
    await app().createUser({ email: addr, password: PASSWORD });
    const res = await login(app(), addr, 'ui');
    assert.equal(res.status, 200);
    assert.equal(res.body.session_key, undefined);
    const raw = String(res.headers['set-cookie']);
    assert.match(raw, /HttpOnly/);
    assert.match(raw, /SameSite=Strict/);
    assert.doesNotMatch(raw, /Secure/, 'served over http: no Secure');
    const cookie = cookieOf(res);
    const me = await app().request('GET', '/api/v0/users/current/', { key: null, headers: { cookie } });
    assert.equal(me.status, 200, me.raw);
    assert.equal(me.body.email, addr);
    const status = await app().request('GET', '/api/v0/tfa/status/', { key: null, headers: { cookie } });
    assert.equal(status.status, 200);
    const out = await app().request('POST', '/api/v0/auth/logout/', { key: null, headers: { cookie, 'x-gpuplane-csrf': '1' } });
    assert.equal(out.status, 200);
    assert.match(String(out.headers['set-cookie']), /Max-Age=0/);
    assert.equal((await app().request('GET', '/api/v0/users/current/', { key: null, headers: { cookie } })).status, 401);
  });

  test('an API key sent as the cookie is not a session', async () => {
    const { api_key } = await app().createUser();
    const me = await app().request('GET', '/api/v0/users/current/', { key: null, headers: { cookie: `gpuplane_session=${api_key}` } });
    assert.equal(me.status, 401);
  });

  test('sessions expire after 7 days (virtual clock)', async () => {
    const addr = email();
    await app().createUser({ email: addr, password: PASSWORD });
    const res = await login(app(), addr, 'cli');
    await app().advance(7 * 86400 - 60);
    assert.equal((await app().request('GET', '/api/v0/users/current/', { key: res.body.session_key })).status, 200);
    await app().advance(61);
    assert.equal((await app().request('GET', '/api/v0/users/current/', { key: res.body.session_key })).status, 401);
  });

  test('wrong password is 401 auth_error, unknown user the same; after a few, a short delay, not a lock', async () => {
    const addr = email();
    await app().createUser({ email: addr, password: PASSWORD });
    const unknown = await login(app(), email());
    const wrong = await login(app(), addr, 'cli', 'nope-nope');
    assert.equal(wrong.status, 401);
    assert.equal(wrong.body.error, 'auth_error');
    assert.deepEqual(unknown.body, wrong.body);
    for (let i = 0; i < 4; i++) await login(app(), addr, 'cli', 'nope-nope');
    const held = await login(app(), addr, 'cli');
    assert.equal(held.status, 429);
    assert.equal(held.body.error, 'rate_limited');
    assert.equal(held.headers['retry-after'], '15', 'seconds, not the old 15-minute lock');
    await app().advance(15);
    assert.equal((await login(app(), addr, 'cli')).status, 200);
  });

  test('with 2FA: login returns tfa_required, tfa_secret and methods; TOTP completes it logged out (CLI → session_key)', async () => {
    const addr = email();
    const u = await userWithTotp(app(), { email: addr, password: PASSWORD });
    const res = await login(app(), addr, 'cli');
    assert.equal(res.status, 200);
    assert.equal(res.body.tfa_required, true);
    assert.equal(typeof res.body.tfa_secret, 'string');
    assert.equal(res.body.session_key, undefined);
    assert.equal(res.body.methods.length, 1);
    assert.equal(res.body.methods[0].method, 'totp');
    const done = await app().request('POST', '/api/v0/tfa/', { key: null, body: { tfa_method: 'totp', code: codeNow(app(), u.secret), secret: res.body.tfa_secret } });
    assert.equal(done.status, 200, done.raw);
    assert.equal(done.body.email, addr);
    assert.equal(done.body.tfa_status, 'enabled');
    assert.equal(done.body.legacy_tfa_user, undefined);
    assert.equal(done.body.backup_codes_remaining, undefined);
    assert.equal((await app().request('GET', '/api/v0/users/current/', { key: done.body.session_key })).status, 200);
    // The login secret completes one login only.
    const again = await app().request('POST', '/api/v0/tfa/', { key: null, body: { tfa_method: 'totp', code: codeNow(app(), u.secret, 1), secret: res.body.tfa_secret } });
    assert.equal(again.status, 403);
    assert.equal(again.body.error, 'auth_error');
  });

  test('UI 2FA login by SMS: the secret fetches the code, the session comes as a cookie only', async () => {
    const addr = email();
    const phone = newPhone();
    const { api_key } = await app().createUser({ email: addr, password: PASSWORD, phone_number: phone, legacy_tfa: true });
    assert.ok(api_key);
    const res = await login(app(), addr, 'ui');
    assert.equal(res.body.tfa_required, true);
    assert.equal(res.body.legacy_tfa_user, true);
    const sent = await app().request('POST', '/api/v0/tfa/sms/', { key: null, body: { secret: res.body.tfa_secret } });
    assert.equal(sent.status, 200, sent.raw);
    assert.equal(sent.body.secret, res.body.tfa_secret);
    const other = await app().request('POST', '/api/v0/tfa/sms/', { key: null, body: { secret: res.body.tfa_secret, phone_number: newPhone() } });
    assert.equal(other.body.error, 'phone_number_mismatch');
    const code = await lastCode(app(), phone, 'sms');
    const wrong = await app().request('POST', '/api/v0/tfa/', { key: null, body: { tfa_method: 'sms', code: code === '000000' ? '111111' : '000000', secret: res.body.tfa_secret } });
    assert.equal(wrong.status, 400);
    assert.equal(wrong.body.error, '2fa_login_failed');
    const done = await app().request('POST', '/api/v0/tfa/', { key: null, body: { tfa_method: 'sms', code, secret: res.body.tfa_secret } });
    assert.equal(done.status, 200, done.raw);
    assert.equal(done.body.session_key, undefined);
    assert.equal(done.body.legacy_tfa_user, true);
    const me = await app().request('GET', '/api/v0/users/current/', { key: null, headers: { cookie: cookieOf(done) } });
    assert.equal(me.status, 200);
  });

  test('CLI with an API key: POST /tfa/ with TOTP returns a new session_key; a backup code reports the rest', async () => {
    const u = await userWithTotp(app());
    const res = await app().request('POST', '/api/v0/tfa/', { key: u.key, body: { tfa_method: 'totp', code: codeNow(app(), u.secret) } });
    assert.equal(res.status, 200, res.raw);
    assert.match(res.body.session_key, /^gps_/);
    const b = await app().request('POST', '/api/v0/tfa/', { key: u.key, body: { backup_code: u.backupCodes[0].toLowerCase() } });
    assert.equal(b.status, 200, b.raw);
    assert.equal(b.body.backup_codes_remaining, 9);
    const admin = await app().request('POST', '/api/v0/tfa/', { key: u.key, body: { backup_code: u.backupCodes[1], admin: true } });
    assert.equal(admin.status, 403);
  });

  test('2FA login by e-mail code; the logged-out tfa_secret expires (30 min) as an auth_error', async () => {
    const addr = email();
    await userWithTotp(app(), { email: addr, password: PASSWORD });
    const res = await login(app(), addr, 'cli');
    const sent = await app().request('POST', '/api/v0/tfa/email/', { key: null, body: { secret: res.body.tfa_secret } });
    assert.equal(sent.status, 200, sent.raw);
    const code = await lastCode(app(), addr, 'email');
    const done = await app().request('POST', '/api/v0/tfa/', { key: null, body: { tfa_method: 'email', code, secret: res.body.tfa_secret } });
    assert.equal(done.status, 200, done.raw);
    assert.match(done.body.session_key, /^gps_/);

    const res2 = await login(app(), addr, 'cli');
    await app().advance(30 * 60 + 1);
    const late = await app().request('POST', '/api/v0/tfa/email/', { key: null, body: { secret: res2.body.tfa_secret } });
    assert.equal(late.status, 403);
    assert.equal(late.body.error, 'auth_error');
  });

  test('2FA login: no code is missing_auth_value; an SMS code without secret is missing_params', async () => {
    const u = await userWithTotp(app());
    const none = await app().request('POST', '/api/v0/tfa/', { key: u.key, body: {} });
    assert.equal(none.status, 400);
    assert.equal(none.body.error, 'missing_auth_value');
    const noSecret = await app().request('POST', '/api/v0/tfa/', { key: u.key, body: { tfa_method: 'sms', code: '123456' } });
    assert.equal(noSecret.body.error, 'missing_params');
    const bad = await app().request('POST', '/api/v0/tfa/', { key: u.key, body: { tfa_method: 'push', code: '123456' } });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error, 'bad_request');
  });
});
