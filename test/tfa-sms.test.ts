// SMS sending rules: recent-code and resend spacing, per-account / per-number / pre-authorization limits, the block
// list, the fraud flag, and the emulator faults of contract §2 (sms_error, sms_rate_limited, store_unavailable).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { addSms, authorizeByEmail, lastCode, newPhone, outboxCount, userWithTotp } from './helpers/tfa-flow.js';

forEachDialect('tfa sms', (app) => {
  const legacyUser = async () => {
    const phone = newPhone();
    const { user, api_key: key } = await app().createUser({ phone_number: phone, legacy_tfa: true });
    return { user, key, phone };
  };
  const fault = async (body: Record<string, unknown>) => {
    const r = await app().request('POST', '/_emu/faults', { body });
    assert.equal(r.status, 200, r.raw);
  };

  test('a recent code gives tfa_challenge_exists; resend sends a new code on the same secret, spaced 30 s', async () => {
    const { key, phone } = await legacyUser();
    const first = await app().request('POST', '/api/v0/tfa/sms/', { key, body: {} });
    assert.equal(first.status, 200);
    assert.match(first.body.msg, new RegExp(phone.slice(-4)));
    const again = await app().request('POST', '/api/v0/tfa/sms/', { key, body: {} });
    assert.equal(again.status, 400);
    assert.equal(again.body.error, 'tfa_challenge_exists');
    const tooSoon = await app().request('POST', '/api/v0/tfa/sms/resend/', { key, body: { secret: first.body.secret } });
    assert.equal(tooSoon.status, 429);
    assert.equal(tooSoon.body.error, 'sms_rate_limited');
    await app().advance(31);
    const oldCode = await lastCode(app(), phone, 'sms');
    const mismatch = await app().request('POST', '/api/v0/tfa/sms/resend/', { key, body: { secret: first.body.secret, phone_number: newPhone() } });
    assert.equal(mismatch.body.error, 'phone_number_mismatch');
    const resend = await app().request('POST', '/api/v0/tfa/sms/resend/', { key, body: { secret: first.body.secret, phone_number: phone } });
    assert.equal(resend.status, 200, resend.raw);
    assert.equal(resend.body.secret, first.body.secret);
    assert.equal(await outboxCount(app(), phone, 'sms'), 2);
    const newCode = await lastCode(app(), phone, 'sms');
    if (newCode !== oldCode) {
      const stale = await app().request('PUT', '/api/v0/tfa/regen-backup-codes/', { key, body: { tfa_method: 'sms', code: oldCode, secret: first.body.secret } });
      assert.equal(stale.body.error, '2fa_verification_failed');
    }
    // Bearer and no secret: resend starts a new challenge.
    await app().advance(121);
    const fresh = await app().request('POST', '/api/v0/tfa/sms/resend/', { key, body: {} });
    assert.equal(fresh.status, 200, fresh.raw);
    assert.notEqual(fresh.body.secret, first.body.secret);
    const unknown = await app().request('POST', '/api/v0/tfa/sms/resend/', { key, body: { secret: 'tfs_unknown' } });
    assert.equal(unknown.body.error, 'challenge_not_found');
  });

  test('missing_phone_number with no number anywhere; tfa_method_id of another type or user', async () => {
    const { api_key: key } = await app().createUser();
    const res = await app().request('POST', '/api/v0/tfa/sms/', { key, body: {} });
    assert.equal(res.status, 400);
    assert.equal(res.body.error, 'missing_phone_number');
    const u = await userWithTotp(app());
    const totpId = await app().request('POST', '/api/v0/tfa/sms/', { key: u.key, body: { tfa_method_id: u.methodId } });
    assert.equal(totpId.body.error, 'invalid_tfa_method');
    const none = await app().request('POST', '/api/v0/tfa/sms/', { key: u.key, body: { tfa_method_id: 987654 } });
    assert.equal(none.status, 404);
    assert.equal(none.body.error, 'not_found');
  });

  test('a new number needs the add-method window (authorization_required)', async () => {
    const { api_key: key } = await app().createUser();
    const res = await app().request('POST', '/api/v0/tfa/sms/', { key, body: { phone_number: newPhone() } });
    assert.equal(res.status, 403);
    assert.equal(res.body.error, 'authorization_required');
  });

  test('block list: sms_blocked_number before anything is sent', async () => {
    const { user, api_key: key } = await app().createUser();
    await authorizeByEmail(app(), key, user.email);
    for (const blocked of ['+19005550123', '+8823456789', '+15550101234']) {
      const res = await app().request('POST', '/api/v0/tfa/sms/', { key, body: { phone_number: blocked } });
      assert.equal(res.status, 400, blocked);
      assert.equal(res.body.error, 'sms_blocked_number');
      assert.equal(await outboxCount(app(), blocked, 'sms'), 0);
    }
  });

  test('concurrent sends: the per-number limit holds (the send is reserved atomically, not counted then recorded)', async () => {
    // Eight accounts share one number (per-account limits and the recent-code check do not apply across them); they
    // ask for a code at the same moment. The number's limit is 5 an hour: exactly 5 codes go out.
    const phone = newPhone();
    const keys: string[] = [];
    for (let i = 0; i < 8; i++) keys.push((await app().createUser({ phone_number: phone, legacy_tfa: true })).api_key);
    const replies = await Promise.all(keys.map((key) => app().request('POST', '/api/v0/tfa/sms/', { key, body: {} })));
    const sent = replies.filter((r) => r.status === 200).length;
    const limited = replies.filter((r) => r.status === 429 && r.body.error === 'sms_rate_limited').length;
    assert.equal(sent, 5, replies.map((r) => r.raw).join('\n'));
    assert.equal(limited, 3);
    assert.equal(await outboxCount(app(), phone, 'sms'), 5);
  });

  test('a failed send gives its reservation back: it does not count against the limit', async () => {
    const { key, phone } = await legacyUser();
    await fault({ fault: 'sms_error', count: 1 });
    const failed = await app().request('POST', '/api/v0/tfa/sms/', { key, body: {} });
    assert.notEqual(failed.status, 200, failed.raw);
    for (let i = 0; i < 5; i++) {
      const r = await app().request('POST', '/api/v0/tfa/sms/', { key, body: {} });
      assert.equal(r.status, 200, `send ${i}: ${r.raw}`);
      await app().advance(121);
    }
    const sixth = await app().request('POST', '/api/v0/tfa/sms/', { key, body: {} });
    assert.equal(sixth.status, 429, sixth.raw);
  });

  test('per-number limit: 5 codes an hour to one number; pre-authorization cap: 3 a day per new number', async () => {
    const { key, phone } = await legacyUser();
    for (let i = 0; i < 5; i++) {
      const r = await app().request('POST', '/api/v0/tfa/sms/', { key, body: {} });
      assert.equal(r.status, 200, `send ${i}: ${r.raw}`);
      await app().advance(121);
    }
    const sixth = await app().request('POST', '/api/v0/tfa/sms/', { key, body: {} });
    assert.equal(sixth.status, 429);
    assert.equal(sixth.body.error, 'sms_rate_limited');
    assert.ok(Number(sixth.headers['retry-after']) > 0);
    assert.equal(await outboxCount(app(), phone, 'sms'), 5);

    const target = newPhone();
    for (let i = 0; i < 3; i++) {
      const { user, api_key } = await app().createUser();
      await authorizeByEmail(app(), api_key, user.email);
      const r = await app().request('POST', '/api/v0/tfa/sms/', { key: api_key, body: { phone_number: target } });
      assert.equal(r.status, 200, r.raw);
    }
    const { user, api_key } = await app().createUser();
    await authorizeByEmail(app(), api_key, user.email);
    const capped = await app().request('POST', '/api/v0/tfa/sms/', { key: api_key, body: { phone_number: target } });
    assert.equal(capped.status, 429);
    assert.equal(capped.body.error, 'preauth_phone_cap');
  });

  test('codes to many different numbers flag the account for SMS fraud (sms_fraud_detected, stays on)', async () => {
    const { user, api_key: key } = await app().createUser();
    const codes: number[] = [];
    for (let i = 0; i < 5; i++) {
      await authorizeByEmail(app(), key, user.email);
      const r = await app().request('POST', '/api/v0/tfa/sms/', { key, body: { phone_number: newPhone() } });
      codes.push(r.status);
    }
    assert.deepEqual(codes, [200, 200, 200, 200, 200]);
    const sixth = await app().request('POST', '/api/v0/tfa/sms/', { key, body: { phone_number: newPhone() } });
    assert.equal(sixth.status, 403);
    assert.equal(sixth.body.error, 'sms_fraud_detected');
    await app().advance(2 * 86400);
    const later = await app().request('POST', '/api/v0/tfa/sms/', { key, body: { phone_number: newPhone() } });
    assert.equal(later.body.error, 'sms_fraud_detected');
  });

  test('per-account limit: 10 SMS an hour, whatever the numbers', async () => {
    const { user, key, phone } = await legacyUser();
    const send = async (body: Record<string, unknown>) => {
      const r = await app().request('POST', '/api/v0/tfa/sms/', { key, body });
      await app().advance(121);
      return r;
    };
    for (let i = 0; i < 5; i++) assert.equal((await send({})).status, 200, `number on file, send ${i}`);
    const second = newPhone();
    const methodId = await addSms(app(), key, user.email, second);
    for (let i = 0; i < 4; i++) assert.equal((await send({ tfa_method_id: methodId })).status, 200, `method, send ${i}`);
    assert.equal(await outboxCount(app(), phone, 'sms') + (await outboxCount(app(), second, 'sms')), 10);
    await authorizeByEmail(app(), key, user.email);
    const eleventh = await send({ phone_number: newPhone() });
    assert.equal(eleventh.status, 429);
    assert.equal(eleventh.body.error, 'sms_rate_limited');
    assert.match(eleventh.body.msg, /account/);
  });

  test('faults: sms_error → twilio_error, sms_rate_limited → twilio_rate_limited, for `count` sends; nothing sent', async () => {
    const { key, phone } = await legacyUser();
    await fault({ fault: 'sms_error', count: 2 });
    for (let i = 0; i < 2; i++) {
      const r = await app().request('POST', '/api/v0/tfa/sms/', { key, body: {} });
      assert.equal(r.status, 400);
      assert.equal(r.body.error, 'twilio_error');
    }
    await fault({ fault: 'sms_rate_limited' });
    const limited = await app().request('POST', '/api/v0/tfa/sms/', { key, body: {} });
    assert.equal(limited.status, 429);
    assert.equal(limited.body.error, 'twilio_rate_limited');
    assert.equal(await outboxCount(app(), phone, 'sms'), 0);
    // A failed send leaves no recent challenge: the next send is not tfa_challenge_exists.
    const ok = await app().request('POST', '/api/v0/tfa/sms/', { key, body: {} });
    assert.equal(ok.status, 200, ok.raw);
  });

  test('fault store_unavailable: the add-method gate answers service_unavailable (503), then works again', async () => {
    const u = await userWithTotp(app());
    await authorizeByEmail(app(), u.key, u.user.email);
    const setup = await app().request('POST', '/api/v0/tfa/totp-setup/', { key: u.key });
    await fault({ fault: 'store_unavailable' });
    const { totpCode } = await import('../src/tfa/totp.js');
    const body = { tfa_method: 'totp', code: totpCode(setup.body.secret, app().clock.now()), secret: setup.body.secret };
    const down = await app().request('POST', '/api/v0/tfa/confirm-new/', { key: u.key, body });
    assert.equal(down.status, 503);
    assert.equal(down.body.error, 'service_unavailable');
    const up = await app().request('POST', '/api/v0/tfa/confirm-new/', { key: u.key, body });
    assert.equal(up.status, 200, up.raw);
  });

  test('an unknown fault name is a 400', async () => {
    const r = await app().request('POST', '/_emu/faults', { body: { fault: 'sms_explodes' } });
    assert.equal(r.status, 400);
  });
});
