// Threats (issue 29 item 22): squatting someone else's address with an unverified sign-up (the owner then got 409 and
// could never sign up), a squatter's password surviving the owner's verification, and guessing the e-mailed
// verification code (a code a minute with five tries each allowed about 7,200 guesses per account a day).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { lastCode, outboxCount } from './helpers/tfa-flow.js';
import { EMAIL_VERIFY_CODES_PER_DAY, EMAIL_VERIFY_GUESSES_PER_DAY, EMAIL_VERIFY_RESEND_S } from '../src/login/login-constants.js';
import { TFA_CHALLENGE_MAX_ATTEMPTS } from '../src/tfa/tfa-constants.js';

let n = 0;
const email = () => `squat${process.pid}_${n++}@example.com`;
const SQUATTER = 'squatter password';
const OWNER = 'owner password 1';

const signUp = (app: TestApp, addr: string, password: string, full_name = '') =>
  app.request('POST', '/api/v0/users/', { key: null, body: { email: addr, password, ...(full_name ? { full_name } : {}) } });
const verify = (app: TestApp, addr: string, code: string, password?: string) =>
  app.request('POST', '/api/v0/users/verify-email/', { key: null, body: { email: addr, code, ...(password ? { password } : {}) } });
const login = (app: TestApp, addr: string, password: string) =>
  app.request('POST', '/api/v0/auth/login/', { key: null, body: { username: addr, password } });
const wrong = (code: string) => (code === '000000' ? '111111' : '000000');

forEachDialect('sign-up takeover and verification codes', (app) => {
  test('the owner signs up an address a squatter signed up first: the squatter\'s code and password die', async () => {
    const addr = email();
    assert.equal((await signUp(app(), addr, SQUATTER, 'Mallory')).status, 200);
    const squatterCode = await lastCode(app(), addr, 'email');
    const mine = await signUp(app(), addr, OWNER, 'Alice');
    assert.equal(mine.status, 200, mine.raw);
    assert.equal(mine.body.user.full_name, 'Alice');
    assert.equal((await verify(app(), addr, squatterCode)).status, 400, 'a code sent before the takeover is burnt');
    const ok = await verify(app(), addr, await lastCode(app(), addr, 'email'), OWNER);
    assert.equal(ok.status, 200, ok.raw);
    assert.equal((await login(app(), addr, SQUATTER)).status, 401);
    const s = await login(app(), addr, OWNER);
    assert.equal(s.status, 200, s.raw);
    assert.equal(s.body.full_name, 'Alice');
    assert.equal((await signUp(app(), addr, SQUATTER)).status, 409, 'a verified address is taken');
  });

  test('a squatter who signs up again after the owner: no password of theirs survives the owner\'s verification', async () => {
    const addr = email();
    await signUp(app(), addr, OWNER);
    await signUp(app(), addr, SQUATTER);
    const code = await lastCode(app(), addr, 'email');
    const refused = await verify(app(), addr, code, OWNER);
    assert.equal(refused.status, 400, 'the owner\'s password is not the latest sign-up\'s');
    assert.match(refused.body.msg, /sign up again/);
    // Without a password, the address is verified and no password is kept.
    const bare = await verify(app(), addr, code);
    assert.equal(bare.status, 200, bare.raw);
    assert.match(bare.body.msg, /no password was kept/);
    assert.equal((await login(app(), addr, SQUATTER)).status, 401);
    assert.equal((await login(app(), addr, OWNER)).status, 401);
    // The reader of the mail sets a password with a reset code.
    assert.equal((await app().request('POST', '/api/v0/users/reset-password/', { key: null, body: { email: addr } })).status, 200);
    const reset = await app().request('PUT', '/api/v0/users/reset-password/', { key: null, body: { email: addr, code: await lastCode(app(), addr, 'email'), new_password: OWNER } });
    assert.equal(reset.status, 200, reset.raw);
    assert.equal((await login(app(), addr, OWNER)).status, 200);
  });

  test('a subaccount\'s unverified address is not taken over (its parent holds it)', async () => {
    const parent = await app().createUser();
    const addr = email();
    const sub = await app().request('POST', '/api/v0/users/', { key: parent.api_key, body: { email: addr, password: SQUATTER, parent_id: 'me' } });
    assert.equal(sub.status, 200, sub.raw);
    assert.equal((await signUp(app(), addr, OWNER)).status, 409);
  });

  test('verification codes: five guesses a code, a capped number of codes and of guesses a day', async () => {
    const addr = email();
    await signUp(app(), addr, OWNER);
    let guesses = 0;
    // A new code each minute, every one guessed at until it burns, until the day's guesses are spent.
    while (guesses < EMAIL_VERIFY_GUESSES_PER_DAY) {
      const code = await lastCode(app(), addr, 'email');
      for (let i = 0; i < TFA_CHALLENGE_MAX_ATTEMPTS; i++, guesses++) assert.equal((await verify(app(), addr, wrong(code))).status, 400, `guess ${guesses}`);
      if (guesses < EMAIL_VERIFY_GUESSES_PER_DAY) assert.equal((await verify(app(), addr, code)).status, 400, 'a code burns after its tries');
      await app().advance(EMAIL_VERIFY_RESEND_S);
      await app().request('POST', '/api/v0/users/verify-email/resend/', { key: null, body: { email: addr } });
    }
    const held = await verify(app(), addr, await lastCode(app(), addr, 'email'));
    assert.equal(held.status, 429, 'the right code of a fresh mail after a day\'s guesses: not checked');
    assert.equal(held.body.error, 'rate_limited');
    for (let i = 0; i < EMAIL_VERIFY_CODES_PER_DAY + 2; i++) {
      await app().advance(EMAIL_VERIFY_RESEND_S);
      await app().request('POST', '/api/v0/users/verify-email/resend/', { key: null, body: { email: addr } });
    }
    assert.equal(await outboxCount(app(), addr, 'email'), EMAIL_VERIFY_CODES_PER_DAY, 'no more codes than the day allows');
    await app().advance(86400);
    await app().request('POST', '/api/v0/users/verify-email/resend/', { key: null, body: { email: addr } });
    assert.equal((await verify(app(), addr, await lastCode(app(), addr, 'email'), OWNER)).status, 200, 'the next day');
  });
});
