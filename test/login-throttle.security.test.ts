// Threats: online password guessing (a burst of parallel guesses outrunning the count, issue 29 item 15), password
// spraying from one address over many accounts, guessing one account from many addresses, locking the real owner
// out by failing logins on purpose (a denial of service), and telling which addresses have accounts from the 429s.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { LOGIN_ALERT_FAILURES, LOGIN_THROTTLE } from '../src/login/login-constants.js';

const PASSWORD = 'correct horse battery';
let n = 0;
const email = () => `throttle${process.pid}_${n++}@example.com`;
let ip = 0;
/** A fresh source address (TEST-NET-3), so the tests' address scopes do not meet. */
const newIp = () => `203.0.113.${++ip}`;

async function login(app: TestApp, username: string, password: string, from: string) {
  const res = await app.app.inject({ method: 'POST', url: '/api/v0/auth/login/', payload: { username, password, client: 'cli' }, remoteAddress: from });
  return { status: res.statusCode, body: JSON.parse(res.body), retryAfter: Number(res.headers['retry-after'] ?? 0) };
}

async function alerts(app: TestApp, to: string): Promise<number> {
  const res = await app.request('GET', '/_emu/outbox', { query: { to, channel: 'email' } });
  return res.body.messages.filter((m: { text: string }) => m.text.startsWith('Failed logins')).length;
}

forEachDialect('password throttle', (app) => {
  test('60 parallel wrong passwords: exactly the allowance is checked, and the right one next is held back too', async () => {
    const addr = email();
    await app().createUser({ email: addr, password: PASSWORD });
    const from = newIp();
    const replies = await Promise.all(Array.from({ length: 60 }, () => login(app(), addr, 'wrong password', from)));
    const checked = replies.filter((r) => r.status === 401);
    const held = replies.filter((r) => r.status === 429);
    assert.equal(checked.length, LOGIN_THROTTLE.pair.free, `checked ${checked.length} of 60`);
    assert.equal(held.length, 60 - LOGIN_THROTTLE.pair.free);
    assert.ok(held.every((r) => r.body.error === 'rate_limited' && r.retryAfter > 0));
    const right = await login(app(), addr, PASSWORD, from);
    assert.equal(right.status, 429, 'the right password right after the burst is not even checked');
    await app().advance(right.retryAfter);
    assert.equal((await login(app(), addr, PASSWORD, from)).status, 200);
  });

  test('delays grow with each further wrong password; the right password clears them', async () => {
    const addr = email();
    await app().createUser({ email: addr, password: PASSWORD });
    const from = newIp();
    for (let i = 0; i < LOGIN_THROTTLE.pair.free; i++) assert.equal((await login(app(), addr, 'nope-nope', from)).status, 401);
    const first = await login(app(), addr, PASSWORD, from);
    assert.equal(first.status, 429);
    assert.equal(first.retryAfter, LOGIN_THROTTLE.pair.baseDelayS);
    await app().advance(first.retryAfter);
    assert.equal((await login(app(), addr, 'nope-nope', from)).status, 401);
    const second = await login(app(), addr, PASSWORD, from);
    assert.equal(second.retryAfter, 2 * LOGIN_THROTTLE.pair.baseDelayS, 'the delay doubled');
    await app().advance(second.retryAfter);
    assert.equal((await login(app(), addr, PASSWORD, from)).status, 200);
    for (let i = 0; i < LOGIN_THROTTLE.pair.free; i++) assert.equal((await login(app(), addr, 'nope-nope', from)).status, 401, 'a fresh allowance');
  });

  test('failures from elsewhere do not lock the owner out of an address they logged in from; the owner is e-mailed once', async () => {
    const addr = email();
    await app().createUser({ email: addr, password: PASSWORD });
    const home = newIp();
    assert.equal((await login(app(), addr, PASSWORD, home)).status, 200);
    // Many addresses, each up to its own allowance: the account scope fills.
    const guesses = LOGIN_THROTTLE.account.free + LOGIN_THROTTLE.pair.free;
    for (let i = 0; i < guesses / LOGIN_THROTTLE.pair.free; i++) {
      const from = newIp();
      for (let j = 0; j < LOGIN_THROTTLE.pair.free; j++) await login(app(), addr, 'nope-nope', from);
    }
    const stranger = await login(app(), addr, 'nope-nope', newIp());
    assert.equal(stranger.status, 429, 'a new address is held back by the account scope');
    assert.equal((await login(app(), addr, PASSWORD, home)).status, 200, 'the owner still logs in from home');
    assert.ok(LOGIN_ALERT_FAILURES <= guesses);
    assert.equal(await alerts(app(), addr), 1, 'one e-mail about the failures, not one per failure');
    await app().advance(86400 + 1);
    let from = '';
    for (let j = 0; j < LOGIN_ALERT_FAILURES; j++) await login(app(), addr, 'nope-nope', j % LOGIN_THROTTLE.pair.free === 0 ? (from = newIp()) : from);
    assert.equal(await alerts(app(), addr), 2, 'a day later, a second one');
  });

  test('one address spraying many names is held back after its allowance', async () => {
    const from = newIp();
    for (let i = 0; i < LOGIN_THROTTLE.source.free; i++) assert.equal((await login(app(), email(), 'Summer2026!', from)).status, 401);
    const held = await login(app(), email(), 'Summer2026!', from);
    assert.equal(held.status, 429);
    assert.match(held.body.msg, /from this address/);
  });

  test('a 429 does not tell which addresses have accounts', async () => {
    const real = email();
    await app().createUser({ email: real, password: PASSWORD });
    const ghost = email();
    const from = newIp();
    const replies = [];
    for (const name of [real, ghost]) {
      const other = newIp();
      for (let i = 0; i < LOGIN_THROTTLE.pair.free; i++) await login(app(), name, 'nope-nope', other);
      replies.push(await login(app(), name, 'nope-nope', other));
    }
    assert.deepEqual(replies[0], replies[1]);
    assert.equal(replies[0].status, 429);
    assert.equal((await login(app(), ghost, 'nope-nope', from)).status, 401, 'another address has its own allowance');
  });

  test('counters idle for a day are deleted (names typed at login do not pile up); addresses the account knows stay', async () => {
    const addr = email();
    await app().createUser({ email: addr, password: PASSWORD });
    const home = newIp();
    assert.equal((await login(app(), addr, PASSWORD, home)).status, 200);
    const sprayer = newIp();
    for (let i = 0; i < 3; i++) await login(app(), email(), 'Summer2026!', sprayer);
    const rows = () => app().store.db.selectFrom('login_throttles').select(['scope_key', 'familiar']).execute();
    assert.ok((await rows()).some((r) => r.scope_key === `source:${sprayer}`));
    await app().advance(86400 + 3600);
    await login(app(), email(), 'Summer2026!', newIp()); // a failure runs the hourly prune
    const left = await rows();
    assert.ok(!left.some((r) => r.scope_key.includes(sprayer)), 'the sprayer\'s counters are gone');
    assert.ok(left.some((r) => r.familiar === 1 && r.scope_key.endsWith(`\n${home}`)), 'the owner\'s known address stays');
  });
});
