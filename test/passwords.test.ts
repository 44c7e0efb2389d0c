// Getting back into an account (issue 29 item 7): a password reset by an e-mailed code (limited, expiring, one use,
// every session ended, silent about which addresses exist) and a password change (the current password, the second
// factor when 2FA is on, the other sessions ended).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { codeNow, lastCode, outboxCount, userWithTotp } from './helpers/tfa-flow.js';
import { PASSWORD_RESET_PER_HOUR, PASSWORD_RESET_TTL_S } from '../src/login/login-constants.js';

const PASSWORD = 'correct horse battery';
const NEW = 'a brand new password';
let n = 0;
const email = () => `pw${process.pid}_${n++}@example.com`;

const login = (app: TestApp, username: string, password: string, client: 'cli' | 'ui' = 'cli') =>
  app.request('POST', '/api/v0/auth/login/', { key: null, body: { username, password, client } });
const askReset = (app: TestApp, addr: string) => app.request('POST', '/api/v0/users/reset-password/', { key: null, body: { email: addr } });
const reset = (app: TestApp, addr: string, code: string, newPassword = NEW) =>
  app.request('PUT', '/api/v0/users/reset-password/', { key: null, body: { email: addr, code, new_password: newPassword } });
const change = (app: TestApp, key: string, body: Record<string, unknown>) => app.request('PUT', '/api/v0/users/current/password/', { key, body });

forEachDialect('password reset and change', (app) => {
  test('reset by e-mailed code: one use, every session ends, the old password stops working', async () => {
    const addr = email();
    await app().createUser({ email: addr, password: PASSWORD });
    const s1 = (await login(app(), addr, PASSWORD)).body.session_key;
    const s2 = (await login(app(), addr, PASSWORD)).body.session_key;
    const asked = await askReset(app(), addr);
    assert.equal(asked.status, 200, asked.raw);
    const code = await lastCode(app(), addr, 'email');
    const mail = (await app().request('GET', '/_emu/outbox', { query: { to: addr, channel: 'email' } })).body.messages.at(-1).text;
    assert.match(mail, /\/reset-password/);
    assert.doesNotMatch(mail, /\/api\/v0\//, 'the mail tells a person what to do, not a route');
    assert.equal((await reset(app(), addr, code === '000000' ? '111111' : '000000')).status, 400);
    const done = await reset(app(), addr, code);
    assert.equal(done.status, 200, done.raw);
    assert.match(done.body.msg, /2 sessions ended/);
    for (const key of [s1, s2]) assert.equal((await app().request('GET', '/api/v0/users/current/', { key })).status, 401);
    assert.equal((await login(app(), addr, PASSWORD)).status, 401);
    assert.equal((await login(app(), addr, NEW)).status, 200);
    assert.equal((await reset(app(), addr, code, 'yet another password')).status, 400, 'one use');
  });

  test('reset codes expire, are limited per hour, and the reply never says whether an address has an account', async () => {
    const addr = email();
    await app().createUser({ email: addr, password: PASSWORD });
    await askReset(app(), addr);
    const code = await lastCode(app(), addr, 'email');
    await app().advance(PASSWORD_RESET_TTL_S);
    assert.equal((await reset(app(), addr, code)).status, 400, 'expired');
    for (let i = 0; i < PASSWORD_RESET_PER_HOUR + 2; i++) await askReset(app(), addr);
    assert.equal(await outboxCount(app(), addr, 'email'), PASSWORD_RESET_PER_HOUR, 'no more codes an hour than the limit');
    const ghost = email();
    const known = await askReset(app(), addr);
    const unknown = await askReset(app(), ghost);
    assert.equal(unknown.status, known.status);
    assert.deepEqual({ ...unknown.body, msg: unknown.body.msg.replace(ghost, 'X') }, { ...known.body, msg: known.body.msg.replace(addr, 'X') });
    assert.equal(await outboxCount(app(), ghost, 'email').catch(() => 0), 0);
    assert.equal((await reset(app(), ghost, '123456')).status, 400);
  });

  test('change: needs the current password, ends the other sessions, keeps the one in use', async () => {
    const addr = email();
    await app().createUser({ email: addr, password: PASSWORD });
    const mine = (await login(app(), addr, PASSWORD)).body.session_key;
    const other = (await login(app(), addr, PASSWORD)).body.session_key;
    const bad = await change(app(), mine, { current_password: 'not it at all', new_password: NEW });
    assert.equal(bad.status, 403);
    assert.equal(bad.body.error, 'auth_error');
    const short = await change(app(), mine, { current_password: PASSWORD, new_password: 'short' });
    assert.equal(short.status, 400);
    const ok = await change(app(), mine, { current_password: PASSWORD, new_password: NEW });
    assert.equal(ok.status, 200, ok.raw);
    assert.match(ok.body.msg, /1 other session ended/);
    assert.equal((await app().request('GET', '/api/v0/users/current/', { key: mine })).status, 200);
    assert.equal((await app().request('GET', '/api/v0/users/current/', { key: other })).status, 401);
    assert.equal((await login(app(), addr, NEW)).status, 200);
    assert.equal((await app().request('GET', '/_emu/outbox', { query: { to: addr, channel: 'email' } })).body.messages.at(-1).text.includes('was just changed'), true);
  });

  test('change with 2FA on needs the second factor too', async () => {
    const u = await userWithTotp(app(), { password: PASSWORD });
    const without = await change(app(), u.key, { current_password: PASSWORD, new_password: NEW });
    assert.equal(without.status, 400);
    assert.equal(without.body.error, 'missing_auth_value');
    const ok = await change(app(), u.key, { current_password: PASSWORD, new_password: NEW, tfa_method: 'totp', code: codeNow(app(), u.secret) });
    assert.equal(ok.status, 200, ok.raw);
  });

  test('an account made without a password (the owner) cannot set one with a key: the operator does', async () => {
    const res = await change(app(), app().ownerKey, { current_password: 'anything', new_password: NEW });
    assert.equal(res.status, 403);
    assert.match(res.body.msg, /gpuplane admin set-password/);
  });
});
