// Behaviour of the 2FA endpoints (spec: 2FA method, 2FA time-bound conditions, 2FA endpoints, errors table).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { addSms, authorizeByEmail, codeNow, lastCode, newPhone, userWithTotp } from './helpers/tfa-flow.js';

const BACKUP_FORMAT = /^[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}$/;

forEachDialect('tfa endpoints', (app) => {
  test('status of a new account: 2FA off, no methods, no window', async () => {
    const { api_key: key } = await app().createUser();
    const res = await app().request('GET', '/api/v0/tfa/status/', { key });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { success: true, tfa_enabled: false, methods: [], backup_codes_remaining: 0, new_method_authorized: false });
  });

  test('credentials: none is 401 missing_auth_value, a bad key or tfa_secret 403 auth_error', async () => {
    const none = await app().request('GET', '/api/v0/tfa/status/', { key: null });
    assert.equal(none.status, 401);
    assert.equal(none.body.error, 'missing_auth_value');
    const bad = await app().request('GET', '/api/v0/tfa/status/', { key: 'gpk_not_a_key_at_all_0000000000' });
    assert.equal(bad.status, 403);
    assert.equal(bad.body.error, 'auth_error');
    const badSecret = await app().request('POST', '/api/v0/tfa/sms/', { key: null, body: { secret: 'tfs_nope' } });
    assert.equal(badSecret.status, 403);
    assert.equal(badSecret.body.error, 'auth_error');
    // A secret is no credential on a Bearer-only endpoint.
    const secretOnly = await app().request('POST', '/api/v0/tfa/totp-setup/', { key: null, body: { secret: 'tfs_nope' } });
    assert.equal(secretOnly.status, 401);
    assert.equal(secretOnly.body.error, 'missing_auth_value');
  });

  test('a team context is refused with team_user_forbidden', async () => {
    const { api_key: key } = await app().createUser();
    const team = await app().request('POST', '/api/v0/team/', { key, body: { team_name: `t${Date.now()}` } });
    assert.equal(team.status, 200, team.raw);
    const teamKey = await app().request('POST', '/api/v0/auth/apikeys/', { key, body: { team_id: team.body.id, name: 'team' } });
    assert.equal(teamKey.status, 200, teamKey.raw);
    const secret = teamKey.body.key ?? teamKey.body.api_key ?? teamKey.body.secret;
    const res = await app().request('GET', '/api/v0/tfa/status/', { key: secret });
    assert.equal(res.status, 403);
    assert.equal(res.body.error, 'team_user_forbidden');
  });

  test('first-time setup: the window opens by e-mail code, lasts 30 minutes, then authorization_required', async () => {
    const { user, api_key: key } = await app().createUser();
    const setup = await app().request('POST', '/api/v0/tfa/totp-setup/', { key });
    assert.equal(setup.status, 200);
    assert.match(setup.body.secret, /^[A-Z2-7]{32}$/);
    assert.ok(setup.body.provisioning_uri.startsWith('otpauth://totp/'));
    assert.ok(setup.body.provisioning_uri.includes(`secret=${setup.body.secret}`));
    const body = () => ({ tfa_method: 'totp', code: codeNow(app(), setup.body.secret), secret: setup.body.secret });

    const early = await app().request('POST', '/api/v0/tfa/confirm-new/', { key, body: body() });
    assert.equal(early.status, 403);
    assert.equal(early.body.error, 'authorization_required');

    // With no methods the authorize step is forced to e-mail, whatever is asked.
    const start = await app().request('POST', '/api/v0/tfa/authorize-new-method/', { key, body: { tfa_method: 'sms' } });
    assert.equal(start.status, 200);
    assert.equal(typeof start.body.secret, 'string');
    const code = await lastCode(app(), user.email, 'email');
    assert.match(code, /^\d{6}$/);
    const fin = await app().request('PUT', '/api/v0/tfa/authorize-new-method/', { key, body: { code, secret: start.body.secret } });
    assert.equal(fin.status, 200);
    assert.equal(fin.body.success, true);
    assert.equal((await app().request('GET', '/api/v0/tfa/status/', { key })).body.new_method_authorized, true);

    await app().advance(30 * 60 + 1);
    assert.equal((await app().request('GET', '/api/v0/tfa/status/', { key })).body.new_method_authorized, false);
    const late = await app().request('POST', '/api/v0/tfa/confirm-new/', { key, body: body() });
    assert.equal(late.status, 403);
    assert.equal(late.body.error, 'authorization_required');

    await authorizeByEmail(app(), key, user.email);
    const ok = await app().request('POST', '/api/v0/tfa/confirm-new/', { key, body: body() });
    assert.equal(ok.status, 200, ok.raw);
    assert.equal(ok.body.backup_codes.length, 10);
    for (const c of ok.body.backup_codes) assert.match(c, BACKUP_FORMAT);
    assert.equal(new Set(ok.body.backup_codes).size, 10);
    const status = await app().request('GET', '/api/v0/tfa/status/', { key });
    assert.equal(status.body.tfa_enabled, true);
    assert.equal(status.body.backup_codes_remaining, 10);
    assert.equal(status.body.methods.length, 1);
    const m = status.body.methods[0];
    assert.equal(m.method, 'totp');
    assert.equal(m.is_primary, true);
    assert.equal(m.phone_number, null);
    assert.equal(m.user_id, user.id);
    assert.equal(m.fail_count, 0);
    assert.equal(m.locked_until, null);
    assert.equal(JSON.stringify(status.body).includes(setup.body.secret), false, 'the TOTP secret is never returned');
    assert.equal((await app().request('GET', '/api/v0/users/current/', { key })).body.tfa_status, 'enabled');
  });

  test('confirm-new: body rules (email, label length, missing fields, wrong code)', async () => {
    const { user, api_key: key } = await app().createUser();
    await authorizeByEmail(app(), key, user.email);
    const setup = await app().request('POST', '/api/v0/tfa/totp-setup/', { key });
    const secret = setup.body.secret;
    const email = await app().request('POST', '/api/v0/tfa/confirm-new/', { key, body: { tfa_method: 'email', code: '123456', secret } });
    assert.equal(email.status, 400);
    assert.equal(email.body.error, 'invalid_tfa_method');
    const enumBad = await app().request('POST', '/api/v0/tfa/confirm-new/', { key, body: { tfa_method: 'fax', code: '123456', secret } });
    assert.equal(enumBad.status, 400);
    assert.equal(enumBad.body.error, 'bad_request');
    const longLabel = await app().request('POST', '/api/v0/tfa/confirm-new/', { key, body: { tfa_method: 'totp', code: codeNow(app(), secret), secret, label: 'x'.repeat(31) } });
    assert.equal(longLabel.status, 400);
    assert.equal(longLabel.body.error, 'bad_request');
    assert.match(longLabel.body.msg, /label/);
    const missing = await app().request('POST', '/api/v0/tfa/confirm-new/', { key, body: { tfa_method: 'totp' } });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error, 'missing_params');
    const wrong = await app().request('POST', '/api/v0/tfa/confirm-new/', { key, body: { tfa_method: 'totp', code: codeNow(app(), secret, 5), secret } });
    assert.equal(wrong.status, 400);
    assert.equal(wrong.body.error, '2fa_verification_failed');
    const noPhone = await app().request('POST', '/api/v0/tfa/confirm-new/', { key, body: { tfa_method: 'sms', code: '123456', secret: 'tfs_x' } });
    assert.equal(noPhone.status, 400);
    assert.equal(noPhone.body.error, 'missing_phone_number');
    const label30 = await app().request('POST', '/api/v0/tfa/confirm-new/', { key, body: { tfa_method: 'totp', code: codeNow(app(), secret), secret, label: 'y'.repeat(30) } });
    assert.equal(label30.status, 200, label30.raw);
  });

  test('SMS method: masked number, second method has no backup codes, duplicate number refused, mismatch refused', async () => {
    const u = await userWithTotp(app());
    const phone = newPhone();
    await authorizeByEmail(app(), u.key, u.user.email);
    const sent = await app().request('POST', '/api/v0/tfa/sms/', { key: u.key, body: { phone_number: phone } });
    assert.equal(sent.status, 200, sent.raw);
    const code = await lastCode(app(), phone, 'sms');
    const mismatch = await app().request('POST', '/api/v0/tfa/confirm-new/', { key: u.key, body: { tfa_method: 'sms', code, secret: sent.body.secret, phone_number: newPhone() } });
    assert.equal(mismatch.status, 400);
    assert.equal(mismatch.body.error, 'phone_number_mismatch');
    const ok = await app().request('POST', '/api/v0/tfa/confirm-new/', { key: u.key, body: { tfa_method: 'sms', code, secret: sent.body.secret, phone_number: phone } });
    assert.equal(ok.status, 200, ok.raw);
    assert.equal(ok.body.backup_codes, undefined);
    assert.match(ok.body.msg, /SMS/);
    const status = await app().request('GET', '/api/v0/tfa/status/', { key: u.key });
    const sms = status.body.methods.find((m: any) => m.method === 'sms');
    assert.equal(sms.phone_number, `+${'*'.repeat(phone.length - 5)}${phone.slice(-4)}`);
    assert.equal(sms.is_primary, false);
    assert.equal(JSON.stringify(status.body).includes(phone), false);
    const dup = await app().request('POST', '/api/v0/tfa/confirm-new/', { key: u.key, body: { tfa_method: 'sms', code, secret: sent.body.secret, phone_number: phone } });
    assert.equal(dup.status, 400);
    assert.equal(dup.body.error, 'duplicate_tfa_method');
  });

  test('update: label and primary flag; email and unknown ids refused', async () => {
    const u = await userWithTotp(app());
    const smsId = await addSms(app(), u.key, u.user.email, newPhone());
    const res = await app().request('PUT', '/api/v0/tfa/update/', { key: u.key, body: { tfa_method_id: smsId, label: 'work phone', is_primary: true } });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.method.label, 'work phone');
    assert.equal(res.body.method.is_primary, true);
    const status = await app().request('GET', '/api/v0/tfa/status/', { key: u.key });
    assert.deepEqual(status.body.methods.filter((m: any) => m.is_primary).map((m: any) => m.id), [smsId]);
    const byType = await app().request('PUT', '/api/v0/tfa/update/', { key: u.key, body: { tfa_method: 'totp', label: 'authy' } });
    assert.equal(byType.status, 200);
    assert.equal(byType.body.method.id, u.methodId);
    const email = await app().request('PUT', '/api/v0/tfa/update/', { key: u.key, body: { tfa_method: 'email', label: 'x' } });
    assert.equal(email.body.error, 'invalid_tfa_method');
    const unknown = await app().request('PUT', '/api/v0/tfa/update/', { key: u.key, body: { tfa_method_id: 999999, label: 'x' } });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error, 'not_found');
    const long = await app().request('PUT', '/api/v0/tfa/update/', { key: u.key, body: { tfa_method_id: smsId, label: 'z'.repeat(31) } });
    assert.equal(long.status, 400);
  });

  test('DELETE: removes a method (remaining_methods), the last one disables 2FA and its backup codes', async () => {
    const u = await userWithTotp(app());
    const smsId = await addSms(app(), u.key, u.user.email, newPhone());
    const first = await app().request('DELETE', '/api/v0/tfa/', { key: u.key, body: { tfa_method: 'totp', code: codeNow(app(), u.secret), target_id: smsId } });
    assert.equal(first.status, 200, first.raw);
    assert.deepEqual(Object.keys(first.body).sort(), ['msg', 'remaining_methods']);
    assert.equal(first.body.remaining_methods, 1);
    const needsTarget = await app().request('DELETE', '/api/v0/tfa/', { key: u.key, body: { backup_code: u.backupCodes[0] } });
    assert.equal(needsTarget.status, 400);
    const last = await app().request('DELETE', '/api/v0/tfa/', { key: u.key, body: { backup_code: u.backupCodes[0], target_id: u.methodId } });
    assert.equal(last.status, 200, last.raw);
    assert.deepEqual(last.body, { msg: '2FA Successfully Disabled' });
    const status = await app().request('GET', '/api/v0/tfa/status/', { key: u.key });
    assert.equal(status.body.tfa_enabled, false);
    assert.equal(status.body.backup_codes_remaining, 0);
    assert.equal((await app().request('GET', '/api/v0/users/current/', { key: u.key })).body.tfa_status, 'disabled');
  });

  test('regen-backup-codes: 10 new codes, the old set stops working', async () => {
    const u = await userWithTotp(app());
    const res = await app().request('PUT', '/api/v0/tfa/regen-backup-codes/', { key: u.key, body: { backup_code: u.backupCodes[1] } });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.backup_codes.length, 10);
    for (const c of res.body.backup_codes) assert.match(c, BACKUP_FORMAT);
    const old = await app().request('PUT', '/api/v0/tfa/regen-backup-codes/', { key: u.key, body: { backup_code: u.backupCodes[2] } });
    assert.equal(old.status, 401);
    assert.equal(old.body.error, 'invalid_backup_code');
    assert.equal((await app().request('GET', '/api/v0/tfa/status/', { key: u.key })).body.backup_codes_remaining, 10);
    const byTotp = await app().request('PUT', '/api/v0/tfa/regen-backup-codes/', { key: u.key, body: { tfa_method: 'totp', code: codeNow(app(), u.secret) } });
    assert.equal(byTotp.status, 200);
  });

  test('legacy account: test-submit is untracked_2fa_found; regen backfills the SMS method from the number on file', async () => {
    const phone = newPhone();
    const { user, api_key: key } = await app().createUser({ legacy_tfa: true, phone_number: phone });
    const before = await app().request('GET', '/api/v0/tfa/status/', { key });
    assert.equal(before.body.tfa_enabled, true);
    assert.deepEqual(before.body.methods, []);
    assert.equal(before.body.backup_codes_remaining, 0);
    const legacy = await app().request('POST', '/api/v0/tfa/test-submit/', { key, body: { code: '123456', secret: 'tfs_x', phone_number: phone } });
    assert.equal(legacy.status, 400);
    assert.equal(legacy.body.error, 'untracked_2fa_found');

    const sent = await app().request('POST', '/api/v0/tfa/sms/', { key, body: {} });
    assert.equal(sent.status, 200, sent.raw);
    const code = await lastCode(app(), phone, 'sms');
    const regen = await app().request('PUT', '/api/v0/tfa/regen-backup-codes/', { key, body: { tfa_method: 'sms', code, secret: sent.body.secret } });
    assert.equal(regen.status, 200, regen.raw);
    assert.equal(regen.body.backup_codes.length, 10);
    const after = await app().request('GET', '/api/v0/tfa/status/', { key });
    assert.equal(after.body.methods.length, 1);
    assert.equal(after.body.methods[0].method, 'sms');
    assert.equal(after.body.methods[0].is_primary, true);
    assert.ok(after.body.methods[0].phone_number.endsWith(phone.slice(-4)));
    assert.equal((await app().request('GET', '/api/v0/users/current/', { key })).body.tfa_status, 'enabled');
    assert.ok(user.id > 0);
  });

  test('legacy account: removing 2FA always answers 2FA Successfully Disabled', async () => {
    const phone = newPhone();
    const { api_key: key } = await app().createUser({ legacy_tfa: true, phone_number: phone });
    const sent = await app().request('POST', '/api/v0/tfa/sms/', { key, body: { phone_number: phone } });
    assert.equal(sent.status, 200, sent.raw);
    const code = await lastCode(app(), phone, 'sms');
    const res = await app().request('DELETE', '/api/v0/tfa/', { key, body: { tfa_method: 'sms', code, secret: sent.body.secret } });
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body, { msg: '2FA Successfully Disabled' });
    assert.equal((await app().request('GET', '/api/v0/users/current/', { key })).body.tfa_status, 'disabled');
  });

  test('authorize with TOTP or a backup code sends nothing; PUT rules', async () => {
    const u = await userWithTotp(app());
    const start = await app().request('POST', '/api/v0/tfa/authorize-new-method/', { key: u.key, body: { tfa_method: 'totp' } });
    assert.equal(start.status, 200);
    const noCode = await app().request('PUT', '/api/v0/tfa/authorize-new-method/', { key: u.key, body: { secret: start.body.secret } });
    assert.equal(noCode.body.error, 'missing_auth_value');
    assert.equal(noCode.status, 400);
    const neither = await app().request('PUT', '/api/v0/tfa/authorize-new-method/', { key: u.key, body: {} });
    assert.equal(neither.body.error, 'missing_params');
    // Spec 2FA errors: "No challenge matches the secret" is challenge_not_found: an unknown secret, or another user's.
    const unknown = await app().request('PUT', '/api/v0/tfa/authorize-new-method/', { key: u.key, body: { code: '123456', secret: 'tfs_unknown' } });
    assert.equal(unknown.status, 400);
    assert.equal(unknown.body.error, 'challenge_not_found');
    const other = await userWithTotp(app());
    const otherStart = await app().request('POST', '/api/v0/tfa/authorize-new-method/', { key: other.key, body: { tfa_method: 'totp' } });
    const foreign = await app().request('PUT', '/api/v0/tfa/authorize-new-method/', { key: u.key, body: { code: '123456', secret: otherStart.body.secret } });
    assert.equal(foreign.status, 400);
    assert.equal(foreign.body.error, 'challenge_not_found');
    // A challenge of this user that is not a pending authorization: no_pending_authorization, the PUT step's code.
    const emailChallenge = await app().request('POST', '/api/v0/tfa/email/', { key: u.key, body: {} });
    assert.equal(emailChallenge.status, 200, emailChallenge.raw);
    const notAuthorize = await app().request('PUT', '/api/v0/tfa/authorize-new-method/', { key: u.key, body: { code: '123456', secret: emailChallenge.body.secret } });
    assert.equal(notAuthorize.status, 400);
    assert.equal(notAuthorize.body.error, 'no_pending_authorization');
    const ok = await app().request('PUT', '/api/v0/tfa/authorize-new-method/', { key: u.key, body: { code: codeNow(app(), u.secret), secret: start.body.secret } });
    assert.equal(ok.status, 200, ok.raw);
    assert.equal((await app().request('GET', '/api/v0/tfa/status/', { key: u.key })).body.new_method_authorized, true);
    const used = await app().request('PUT', '/api/v0/tfa/authorize-new-method/', { key: u.key, body: { code: codeNow(app(), u.secret, 1), secret: start.body.secret } });
    assert.equal(used.status, 400);
    assert.equal(used.body.error, 'no_pending_authorization');

    const v = await userWithTotp(app());
    const byBackup = await app().request('POST', '/api/v0/tfa/authorize-new-method/', { key: v.key, body: { backup_code: v.backupCodes[0] } });
    assert.equal(byBackup.status, 200);
    assert.equal(typeof byBackup.body.msg, 'string');
    assert.equal((await app().request('GET', '/api/v0/tfa/status/', { key: v.key })).body.new_method_authorized, true);
  });

  test('e-mail codes need a verified e-mail; SMS sends too, except for admins', async () => {
    const { api_key: key } = await app().createUser({ email_verified: false, phone_number: newPhone() });
    const email = await app().request('POST', '/api/v0/tfa/email/', { key, body: {} });
    assert.equal(email.status, 400);
    assert.equal(email.body.error, 'email_not_verified');
    const auth = await app().request('POST', '/api/v0/tfa/authorize-new-method/', { key, body: {} });
    assert.equal(auth.body.error, 'email_not_verified');
    const sms = await app().request('POST', '/api/v0/tfa/sms/', { key, body: {} });
    assert.equal(sms.body.error, 'email_not_verified');
    const phone = newPhone();
    const admin = await app().createUser({ email_verified: false, is_admin: true, phone_number: phone });
    const adminSms = await app().request('POST', '/api/v0/tfa/sms/', { key: admin.api_key, body: {} });
    assert.equal(adminSms.status, 200, adminSms.raw);
    const adminEmail = await app().request('POST', '/api/v0/tfa/email/', { key: admin.api_key, body: {} });
    assert.equal(adminEmail.body.error, 'email_not_verified');
  });

  test('POST /tfa/email/: a fresh challenge each call, or a new code on the given secret', async () => {
    const { user, api_key: key } = await app().createUser();
    const a = await app().request('POST', '/api/v0/tfa/email/', { key, body: {} });
    const b = await app().request('POST', '/api/v0/tfa/email/', { key, body: {} });
    assert.equal(a.status, 200);
    assert.notEqual(a.body.secret, b.body.secret);
    const again = await app().request('POST', '/api/v0/tfa/email/', { key, body: { secret: a.body.secret } });
    assert.equal(again.body.secret, a.body.secret);
    assert.match(await lastCode(app(), user.email, 'email'), /^\d{6}$/);
  });

  test('deprecated paths still work and say what replaces them', async () => {
    const phone = newPhone();
    const { api_key: key } = await app().createUser({ phone_number: phone, legacy_tfa: true });
    const t = await app().request('POST', '/api/v0/tfa/test/', { key, body: {} });
    assert.equal(t.status, 200, t.raw);
    assert.equal(t.headers.deprecation, 'true');
    assert.match(String(t.headers.link), /\/api\/v0\/tfa\/sms\//);
    await app().advance(31);
    const r = await app().request('POST', '/api/v0/tfa/resend/', { key, body: { secret: t.body.secret } });
    assert.equal(r.status, 200, r.raw);
    assert.equal(r.body.secret, t.body.secret);
    assert.equal(r.headers.deprecation, 'true');

    const u = await userWithTotp(app());
    await authorizeByEmail(app(), u.key, u.user.email);
    const p2 = newPhone();
    const sent = await app().request('POST', '/api/v0/tfa/sms/', { key: u.key, body: { phone_number: p2 } });
    const code = await lastCode(app(), p2, 'sms');
    const sub = await app().request('POST', '/api/v0/tfa/test-submit/', { key: u.key, body: { code, secret: sent.body.secret, phone_number: p2 } });
    assert.equal(sub.status, 200, sub.raw);
    assert.equal(sub.headers.deprecation, 'true');
  });

  test('challenge expiry: an SMS code is 2fa_expired after 10 minutes', async () => {
    const phone = newPhone();
    const { api_key: key } = await app().createUser({ phone_number: phone, legacy_tfa: true });
    const sent = await app().request('POST', '/api/v0/tfa/sms/', { key, body: {} });
    const code = await lastCode(app(), phone, 'sms');
    await app().advance(10 * 60 + 1);
    const res = await app().request('PUT', '/api/v0/tfa/regen-backup-codes/', { key, body: { tfa_method: 'sms', code, secret: sent.body.secret } });
    assert.equal(res.status, 400);
    assert.equal(res.body.error, '2fa_expired');
  });

  test('verification bodies: missing code, missing secret, unknown and used challenges', async () => {
    const phone = newPhone();
    const { api_key: key } = await app().createUser({ phone_number: phone, legacy_tfa: true });
    const noCode = await app().request('PUT', '/api/v0/tfa/regen-backup-codes/', { key, body: { tfa_method: 'sms' } });
    assert.equal(noCode.status, 400);
    assert.equal(noCode.body.error, 'missing_auth_value');
    const noSecret = await app().request('PUT', '/api/v0/tfa/regen-backup-codes/', { key, body: { tfa_method: 'sms', code: '123456' } });
    assert.equal(noSecret.body.error, 'missing_params');
    const unknown = await app().request('PUT', '/api/v0/tfa/regen-backup-codes/', { key, body: { tfa_method: 'sms', code: '123456', secret: 'tfs_nothing' } });
    assert.equal(unknown.body.error, 'challenge_not_found');
    const sent = await app().request('POST', '/api/v0/tfa/sms/', { key, body: {} });
    const code = await lastCode(app(), phone, 'sms');
    const ok = await app().request('PUT', '/api/v0/tfa/regen-backup-codes/', { key, body: { tfa_method: 'sms', code, secret: sent.body.secret } });
    assert.equal(ok.status, 200, ok.raw);
    const used = await app().request('PUT', '/api/v0/tfa/regen-backup-codes/', { key, body: { tfa_method: 'sms', code, secret: sent.body.secret } });
    assert.equal(used.status, 400);
    assert.equal(used.body.error, 'no_challenge_found');
  });
});
