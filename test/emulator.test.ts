// The emulator control API (contract §2) for what the foundation owns: the clock, users, the outbox and reset.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { RealClock } from '../src/platform/clock.js';
import { SecretBox } from '../src/platform/crypto.js';
import { openDatabase } from '../src/database.js';
import { cryptoRandom } from '../src/platform/random.js';
import { forEachDialect, OWNER_KEY } from './helpers/harness.js';

forEachDialect('emulator: clock', (app) => {
  test('GET /_emu/clock is the virtual clock, standing still', async () => {
    const a = await app().request('GET', '/_emu/clock');
    assert.equal(a.status, 200);
    assert.equal(a.body.now, app().clock.now());
    assert.equal((await app().request('GET', '/_emu/clock')).body.now, a.body.now);
  });

  test('advance moves the clock and, before replying, runs what fell due in time order at its due time', async () => {
    const t = app();
    const start = t.clock.now();
    const seen: { n: number; dueAt: number; now: number }[] = [];
    t.scheduler.register('test.emulator.record', async (payload: { n: number }, ctx) => {
      seen.push({ n: payload.n, dueAt: ctx.dueAt, now: t.clock.now() });
    });
    await t.scheduler.schedule('test.emulator.record', start + 30, { n: 2 });
    await t.scheduler.schedule('test.emulator.record', start + 10, { n: 1 });
    await t.scheduler.schedule('test.emulator.record', start + 90, { n: 3 });

    const res = await t.request('POST', '/_emu/clock/advance', { body: { seconds: 60 } });
    assert.equal(res.status, 200);
    assert.equal(res.body.now, start + 60);
    assert.deepEqual(seen, [
      { n: 1, dueAt: start + 10, now: start + 10 },
      { n: 2, dueAt: start + 30, now: start + 30 },
    ]);
    assert.equal((await t.request('GET', '/_emu/clock')).body.now, start + 60);

    // The job due later waits for its time, fractions of seconds included.
    await t.request('POST', '/_emu/clock/advance', { body: { seconds: 29.5 } });
    assert.equal(seen.length, 2);
    await t.request('POST', '/_emu/clock/advance', { body: { seconds: 0.5 } });
    assert.deepEqual(seen.at(-1), { n: 3, dueAt: start + 90, now: start + 90 });
  });

  test('a request arriving while an advance runs waits for it to end and sees the clock where it ended', async () => {
    const t = app();
    const start = t.clock.now();
    let entered!: () => void;
    const inJob = new Promise<void>((r) => (entered = r));
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const seen: number[] = [];
    t.scheduler.register('test.emulator.hold', async () => {
      entered();
      await released;
    });
    t.scheduler.register('test.emulator.late', async (_p, ctx) => void seen.push(ctx.dueAt));
    await t.scheduler.schedule('test.emulator.hold', start + 10, {});

    const order: string[] = [];
    const advance = t.request('POST', '/_emu/clock/advance', { body: { seconds: 60 } }).then((r) => (order.push('advance'), r));
    await inJob;
    // The job holds the advance at start + 10; a request now must not be served at that time.
    const during = t.request('GET', '/_emu/clock').then((r) => (order.push('clock'), r));
    // Work a request makes due before the advance's end is not chased by it: the request runs after the advance.
    const scheduling = t.request('GET', '/_emu/clock').then(async (r) => {
      await t.scheduler.schedule('test.emulator.late', t.clock.now() + 5, {});
      return r;
    });
    // A bounded wait is the only evidence of "not replied yet": a request parks on the advance's promise, which has
    // no event or count to wait on. A request served too early would reply within these 50 ms; a slow machine can
    // only let the check pass without proving it, never fail it falsely. The order asserted below proves the rest.
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(order, [], 'nothing replied while the job runs');
    release();
    const [a, c, s] = await Promise.all([advance, during, scheduling]);
    assert.equal(a.body.now, start + 60);
    assert.equal(c.body.now, start + 60);
    assert.equal(s.body.now, start + 60);
    assert.deepEqual(order, ['advance', 'clock']);
    assert.deepEqual(seen, [], 'the work made due after the advance waits for the next');
    await t.request('POST', '/_emu/clock/advance', { body: { seconds: 5 } });
    assert.deepEqual(seen, [start + 65]);
  });

  test('advance needs a positive number of seconds', async () => {
    for (const body of [{ seconds: 0 }, { seconds: -1 }, { seconds: 'ten' }, {}]) {
      const res = await app().request('POST', '/_emu/clock/advance', { body });
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error, 'bad_request');
      assert.match(res.body.msg, /seconds/);
    }
  });
});

forEachDialect('emulator: users', (app) => {
  test('POST /_emu/users creates a user with the contract defaults and a working full-access key', async () => {
    const res = await app().request('POST', '/_emu/users', { body: { email: 'grace@example.com' } });
    assert.equal(res.status, 200);
    const { user, api_key } = res.body;
    assert.equal(user.email, 'grace@example.com');
    assert.equal(user.credit, 100);
    assert.equal(user.is_admin, false);
    assert.equal(user.email_verified_at, app().clock.now());
    assert.equal(user.tfa_status, 'disabled');
    assert.equal(user.ssh_key, null);
    assert.match(api_key, /^gpk_/);
    const me = await app().request('GET', '/api/v0/users/current', { key: api_key });
    assert.equal(me.status, 200);
    assert.equal(me.body.id, user.id);
  });

  test('every optional field is honoured', async () => {
    const { user, api_key } = (
      await app().request('POST', '/_emu/users', {
        body: { email: 'ada@example.com', full_name: 'Ada L', email_verified: false, is_admin: true, credit: 0.5, phone_number: '+15551234567', password: 'pw' },
      })
    ).body;
    assert.equal(user.full_name, 'Ada L');
    assert.equal(user.email_verified_at, null);
    assert.equal(user.is_admin, true);
    assert.equal(user.credit, 0.5);
    // An admin made here may drive the emulator.
    assert.equal((await app().request('GET', '/_emu/clock', { key: api_key })).status, 200);
  });

  test('legacy_tfa makes an account in the legacy 2FA state, and needs a phone number', async () => {
    const ok = await app().request('POST', '/_emu/users', { body: { email: 'legacy@example.com', legacy_tfa: true, phone_number: '+15557654321' } });
    assert.equal(ok.status, 200);
    assert.equal(ok.body.user.tfa_status, 'legacy');
    const bad = await app().request('POST', '/_emu/users', { body: { email: 'legacy2@example.com', legacy_tfa: true } });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error, 'bad_request');
    assert.match(bad.body.msg, /phone_number/);
  });

  test('an e-mail already taken (in any letter case) is a 409 conflict', async () => {
    await app().request('POST', '/_emu/users', { body: { email: 'twice@example.com' } });
    const res = await app().request('POST', '/_emu/users', { body: { email: 'Twice@Example.com' } });
    assert.equal(res.status, 409);
    assert.equal(res.body.error, 'conflict');
  });

  test('concurrent creates of one e-mail: exactly one succeeds, the others are 409 (never a 500)', async () => {
    const replies = await Promise.all(
      Array.from({ length: 6 }, () => app().request('POST', '/_emu/users', { body: { email: 'race@example.com' } })),
    );
    assert.deepEqual(replies.map((r) => r.status).sort(), [200, 409, 409, 409, 409, 409]);
  });

  test('a malformed e-mail or phone number names the field', async () => {
    for (const [body, field] of [
      [{ email: 'not-an-email' }, 'email'],
      [{ email: 'p@example.com', phone_number: '555-1234' }, 'phone_number'],
      [{ email: 'c@example.com', credit: -1 }, 'credit'],
    ] as const) {
      const res = await app().request('POST', '/_emu/users', { body });
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.match(res.body.msg, new RegExp(field));
    }
  });
});

forEachDialect('emulator: outbox', (app) => {
  test('empty until a message is sent; then every message, newest last, filterable by to and channel', async () => {
    assert.deepEqual((await app().request('GET', '/_emu/outbox')).body, { messages: [] });
    const { outbox } = app().services;
    const now = app().clock.now();
    await outbox.insert({ channel: 'email', to: 'a@example.com', code: '123456', text: 'Your code is 123456', sent_at: now });
    await outbox.insert({ channel: 'sms', to: '+15550001111', code: '654321', text: 'Code 654321', sent_at: now + 1 });
    await outbox.insert({ channel: 'email', to: 'b@example.com', code: null, text: 'Welcome', sent_at: now + 2 });

    const all = (await app().request('GET', '/_emu/outbox')).body.messages;
    assert.deepEqual(
      all.map((m: any) => [m.channel, m.to, m.code, m.text, m.sent_at]),
      [
        ['email', 'a@example.com', '123456', 'Your code is 123456', now],
        ['sms', '+15550001111', '654321', 'Code 654321', now + 1],
        ['email', 'b@example.com', null, 'Welcome', now + 2],
      ],
    );
    assert.ok(all.every((m: any) => Number.isInteger(m.id)));
    assert.deepEqual((await app().request('GET', '/_emu/outbox?channel=sms')).body.messages.map((m: any) => m.to), ['+15550001111']);
    assert.deepEqual((await app().request('GET', '/_emu/outbox?to=b@example.com')).body.messages.map((m: any) => m.text), ['Welcome']);
    assert.deepEqual((await app().request('GET', '/_emu/outbox?to=b@example.com&channel=sms')).body.messages, []);
  });
});

forEachDialect('emulator: reset', (app) => {
  test('reset empties what users made, keeps the bootstrap owner and key, and runs the features\' reset hooks', async () => {
    const t = app();
    const { api_key } = await t.createUser({ email: 'gone@example.com' });
    await t.services.outbox.insert({ channel: 'email', to: 'gone@example.com', code: null, text: 'hi', sent_at: t.clock.now() });
    await t.scheduler.schedule('test.reset.never', t.clock.now() + 3600, {});
    let hookRan = 0;
    t.services.emulator.onReset(async () => {
      hookRan++;
    });
    const ownerBefore = (await t.request('GET', '/api/v0/users/current')).body;

    const res = await t.request('POST', '/_emu/reset', { body: {} });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { success: true });
    assert.equal(hookRan, 1);

    assert.equal((await t.request('GET', '/api/v0/users/current', { key: api_key })).status, 401, 'the user and their key are gone');
    const ownerAfter = await t.request('GET', '/api/v0/users/current', { key: OWNER_KEY });
    assert.equal(ownerAfter.status, 200, 'the bootstrap key stays valid');
    assert.equal(ownerAfter.body.id, ownerBefore.id);
    assert.equal(ownerAfter.body.email, ownerBefore.email);
    assert.deepEqual((await t.request('GET', '/_emu/outbox')).body.messages, []);
    assert.equal(await t.scheduler.pending(), 0);
    // The e-mail is free again.
    assert.equal((await t.request('POST', '/_emu/users', { body: { email: 'gone@example.com' } })).status, 200);
  });

  test('an unknown fault is a 400 naming it', async () => {
    const res = await app().request('POST', '/_emu/faults', { body: { fault: 'meteor_strike' } });
    assert.equal(res.status, 400);
    assert.equal(res.body.error, 'bad_request');
    assert.match(res.body.msg, /meteor_strike/);
  });
});

test('with a real clock, advance is 400 clock_not_virtual and the clock reads real time', async () => {
  const config = loadConfig({
    GPUPLANE_DATABASE_URL: 'sqlite::memory:',
    GPUPLANE_BOOTSTRAP_API_KEY: OWNER_KEY,
    GPUPLANE_SECRET_KEY: 'test-secret-key-0123456789',
    GPUPLANE_SIM_MACHINES: '0',
  });
  const store = await openDatabase(config.databaseUrl);
  const clock = new RealClock();
  const built = await buildApp({ config, store, clock, random: cryptoRandom, log: pino({ level: 'silent' }), secretBox: new SecretBox(config.secretKey!, cryptoRandom) });
  try {
    await built.services.users.ensureOwner(OWNER_KEY, 0);
    const headers = { authorization: `Bearer ${OWNER_KEY}` };
    const before = Date.now() / 1000;
    const now = JSON.parse((await built.app.inject({ method: 'GET', url: '/_emu/clock', headers })).body).now;
    assert.ok(now >= before - 1 && now <= Date.now() / 1000 + 1, 'real time');
    const res = await built.app.inject({ method: 'POST', url: '/_emu/clock/advance', headers, payload: { seconds: 10 } });
    assert.equal(res.statusCode, 400);
    assert.equal(JSON.parse(res.body).error, 'clock_not_virtual');
  } finally {
    await built.app.close();
    await store.close();
  }
});
