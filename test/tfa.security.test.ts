// Threats: online guessing of 2FA codes (bursts of parallel wrong codes, lockout bypass), replay of TOTP codes and
// backup codes, use of expired codes, someone else's challenge secret or method id, tampered secrets at rest,
// plaintext secrets in the database, and server errors that would eat a user's attempts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { codeNow, lastCode, newPhone, userWithTotp, addSms } from './helpers/tfa-flow.js';
import { tfaVerifier } from '../src/tfa/tfa-verify.js';
import { tfaStore } from '../src/tfa/tfa-store.js';
import { SecretBox } from '../src/platform/crypto.js';
import { cryptoRandom } from '../src/platform/random.js';
import { TFA_MAX_FAILED_ATTEMPTS } from '../src/tfa/tfa-constants.js';

/** A 6-digit code that is none of the codes valid now (±1 step). */
function wrongCode(valid: string[]): string {
  for (let i = 0; ; i++) {
    const c = String(100000 + i);
    if (!valid.includes(c)) return c;
  }
}

forEachDialect('tfa security', (app) => {
  test('burst: 20 parallel wrong TOTP codes cost exactly the lockout allowance, then tfa_locked 429', async () => {
    const u = await userWithTotp(app());
    const bad = wrongCode([-1, 0, 1].map((s) => codeNow(app(), u.secret, s)));
    const replies = await Promise.all(
      Array.from({ length: 20 }, () => app().request('POST', '/api/v0/tfa/', { key: u.key, body: { tfa_method: 'totp', code: bad } })),
    );
    const failed = replies.filter((r) => r.body.error === '2fa_login_failed');
    const locked = replies.filter((r) => r.body.error === 'tfa_locked');
    assert.equal(failed.length, TFA_MAX_FAILED_ATTEMPTS);
    assert.equal(locked.length, 20 - TFA_MAX_FAILED_ATTEMPTS);
    for (const r of locked) {
      assert.equal(r.status, 429);
      assert.equal(r.body.fail_count, TFA_MAX_FAILED_ATTEMPTS);
      assert.equal(r.body.locked_until, app().clock.now() + 15 * 60);
    }
    // Locked: even the right code is refused, and the status shows the lock on this method only.
    const right = await app().request('POST', '/api/v0/tfa/', { key: u.key, body: { tfa_method: 'totp', code: codeNow(app(), u.secret) } });
    assert.equal(right.status, 429);
    assert.equal(right.body.error, 'tfa_locked');
    const status = await app().request('GET', '/api/v0/tfa/status/', { key: u.key });
    assert.equal(status.body.methods[0].fail_count, TFA_MAX_FAILED_ATTEMPTS);
    assert.equal(status.body.methods[0].locked_until, app().clock.now() + 15 * 60);
    // The account is not locked: a backup code still works.
    const backup = await app().request('POST', '/api/v0/tfa/', { key: u.key, body: { backup_code: u.backupCodes[0] } });
    assert.equal(backup.status, 200);
    // After 15 minutes the method works again with a fresh count.
    await app().advance(15 * 60);
    const after = await app().request('POST', '/api/v0/tfa/', { key: u.key, body: { tfa_method: 'totp', code: codeNow(app(), u.secret) } });
    assert.equal(after.status, 200, after.raw);
    const s2 = await app().request('GET', '/api/v0/tfa/status/', { key: u.key });
    assert.equal(s2.body.methods[0].fail_count, 0);
    assert.equal(s2.body.methods[0].locked_until, null);
  });

  test('sequential wrong codes report fail_count; the 5th locks with locked_until', async () => {
    const u = await userWithTotp(app());
    const bad = wrongCode([-1, 0, 1].map((s) => codeNow(app(), u.secret, s)));
    for (let i = 1; i <= TFA_MAX_FAILED_ATTEMPTS; i++) {
      const r = await app().request('PUT', '/api/v0/tfa/regen-backup-codes/', { key: u.key, body: { tfa_method: 'totp', code: bad } });
      assert.equal(r.status, 400);
      assert.equal(r.body.error, '2fa_verification_failed');
      assert.equal(r.body.fail_count, i);
      assert.equal(r.body.locked_until, i === TFA_MAX_FAILED_ATTEMPTS ? app().clock.now() + 15 * 60 : null);
    }
  });

  test('replay: a TOTP code is accepted once, also across endpoints', async () => {
    const u = await userWithTotp(app());
    const code = codeNow(app(), u.secret);
    const first = await app().request('POST', '/api/v0/tfa/', { key: u.key, body: { tfa_method: 'totp', code } });
    assert.equal(first.status, 200);
    const again = await app().request('POST', '/api/v0/tfa/', { key: u.key, body: { tfa_method: 'totp', code } });
    assert.equal(again.status, 400);
    assert.equal(again.body.error, '2fa_login_failed');
    const elsewhere = await app().request('PUT', '/api/v0/tfa/regen-backup-codes/', { key: u.key, body: { tfa_method: 'totp', code } });
    assert.equal(elsewhere.body.error, '2fa_verification_failed');
    // The code just set up in confirm-new was spent too (userWithTotp moved on one step; the previous is refused).
    const previous = codeNow(app(), u.secret, -1);
    const prev = await app().request('POST', '/api/v0/tfa/', { key: u.key, body: { tfa_method: 'totp', code: previous } });
    assert.equal(prev.status, 400);
  });

  test('replay in parallel: of two requests with one TOTP code, one wins', async () => {
    const u = await userWithTotp(app());
    const code = codeNow(app(), u.secret);
    const rs = await Promise.all([0, 1, 2].map(() => app().request('POST', '/api/v0/tfa/', { key: u.key, body: { tfa_method: 'totp', code } })));
    assert.equal(rs.filter((r) => r.status === 200).length, 1);
  });

  test('reused backup code: one use each, also in parallel', async () => {
    const u = await userWithTotp(app());
    const rs = await Promise.all([0, 1, 2, 3].map(() => app().request('POST', '/api/v0/tfa/', { key: u.key, body: { backup_code: u.backupCodes[3] } })));
    assert.equal(rs.filter((r) => r.status === 200).length, 1);
    for (const r of rs.filter((x) => x.status !== 200)) {
      assert.equal(r.status, 401);
      assert.equal(r.body.error, 'invalid_backup_code');
    }
    const later = await app().request('POST', '/api/v0/tfa/authorize-new-method/', { key: u.key, body: { backup_code: u.backupCodes[3] } });
    assert.equal(later.body.error, 'invalid_backup_code');
    const made = await app().request('POST', '/api/v0/tfa/', { key: u.key, body: { backup_code: 'AAAA-BBBB-CCCC' } });
    assert.equal(made.body.error, 'invalid_backup_code');
  });

  test('expired: an e-mail code after 10 minutes is 2fa_expired and never accepted', async () => {
    const u = await userWithTotp(app());
    const sent = await app().request('POST', '/api/v0/tfa/email/', { key: u.key, body: {} });
    const code = await lastCode(app(), u.user.email, 'email');
    await app().advance(10 * 60);
    const r = await app().request('POST', '/api/v0/tfa/', { key: u.key, body: { tfa_method: 'email', code, secret: sent.body.secret } });
    assert.equal(r.status, 400);
    assert.equal(r.body.error, '2fa_expired');
  });

  test("wrong secret: another user's challenge secret is challenge_not_found, and their code does not work", async () => {
    const a = await userWithTotp(app());
    const b = await userWithTotp(app());
    const sentA = await app().request('POST', '/api/v0/tfa/email/', { key: a.key, body: {} });
    const codeA = await lastCode(app(), a.user.email, 'email');
    const r = await app().request('POST', '/api/v0/tfa/', { key: b.key, body: { tfa_method: 'email', code: codeA, secret: sentA.body.secret } });
    assert.equal(r.status, 400);
    assert.equal(r.body.error, 'challenge_not_found');
    // An e-mail challenge takes a few wrong codes, then it is burnt even for the right code.
    const bad = codeA === '000000' ? '111111' : '000000';
    for (let i = 0; i < 5; i++) {
      const w = await app().request('POST', '/api/v0/tfa/', { key: a.key, body: { tfa_method: 'email', code: bad, secret: sentA.body.secret } });
      assert.equal(w.body.error, '2fa_login_failed');
    }
    const burnt = await app().request('POST', '/api/v0/tfa/', { key: a.key, body: { tfa_method: 'email', code: codeA, secret: sentA.body.secret } });
    assert.equal(burnt.status, 400);
    assert.equal(burnt.body.error, '2fa_login_failed');
  });

  test("another user's method id: not_found for update, delete, SMS send and verification", async () => {
    const a = await userWithTotp(app());
    const b = await userWithTotp(app());
    const aSms = await addSms(app(), a.key, a.user.email, newPhone());
    const upd = await app().request('PUT', '/api/v0/tfa/update/', { key: b.key, body: { tfa_method_id: a.methodId, label: 'mine now' } });
    assert.equal(upd.status, 404);
    assert.equal(upd.body.error, 'not_found');
    const del = await app().request('DELETE', '/api/v0/tfa/', { key: b.key, body: { tfa_method: 'totp', code: codeNow(app(), b.secret), target_id: a.methodId } });
    assert.equal(del.status, 404);
    const sms = await app().request('POST', '/api/v0/tfa/sms/', { key: b.key, body: { tfa_method_id: aSms } });
    assert.equal(sms.status, 404);
    const login = await app().request('POST', '/api/v0/tfa/', { key: b.key, body: { tfa_method: 'totp', tfa_method_id: a.methodId, code: codeNow(app(), a.secret) } });
    assert.equal(login.status, 404);
    const status = await app().request('GET', '/api/v0/tfa/status/', { key: a.key });
    assert.equal(status.body.methods.length, 2);
    assert.equal(status.body.methods.find((m: any) => m.id === a.methodId).label, 'phone app');
  });

  test('secrets at rest: TOTP secret sealed, codes and session keys only as hashes', async () => {
    const u = await userWithTotp(app());
    const db = app().store.db;
    const m = await db.selectFrom('tfa_methods').selectAll().where('id', '=', u.methodId).executeTakeFirstOrThrow();
    assert.ok(m.totp_secret && !m.totp_secret.includes(u.secret));
    const codes = await db.selectFrom('tfa_backup_codes').select('code_hash').where('user_id', '=', u.user.id).execute();
    for (const c of codes) assert.match(c.code_hash, /^[0-9a-f]{64}$/);
    const dump = JSON.stringify(codes);
    for (const c of u.backupCodes) assert.equal(dump.includes(c), false);
    const s = await app().request('POST', '/api/v0/tfa/', { key: u.key, body: { tfa_method: 'totp', code: codeNow(app(), u.secret) } });
    const keys = JSON.stringify(await db.selectFrom('api_keys').selectAll().execute());
    assert.equal(keys.includes(s.body.session_key), false);
    const ch = JSON.stringify(await db.selectFrom('tfa_challenges').selectAll().execute());
    assert.equal(ch.includes('tfs_'), false);
  });

  test('an undecryptable TOTP secret is tfa_method_not_configured and costs no attempt', async () => {
    const u = await userWithTotp(app());
    const other = new SecretBox('another-secret-key-000000', cryptoRandom);
    await app().store.db.updateTable('tfa_methods').set({ totp_secret: other.seal(u.secret) }).where('id', '=', u.methodId).execute();
    const r = await app().request('POST', '/api/v0/tfa/', { key: u.key, body: { tfa_method: 'totp', code: codeNow(app(), u.secret) } });
    assert.equal(r.status, 400);
    assert.equal(r.body.error, 'tfa_method_not_configured');
    const status = await app().request('GET', '/api/v0/tfa/status/', { key: u.key });
    assert.equal(status.body.methods[0].fail_count, 0);
  });

  test('a server error during a check gives the attempt back', async () => {
    const u = await userWithTotp(app());
    const store = tfaStore(app().store.db);
    const broken = { ...store, acceptTotpStep: async () => { throw new Error('database went away'); } };
    const verifier = tfaVerifier({ store: broken, clock: app().clock, secretBox: app().services.deps.secretBox });
    const user = (await app().store.db.selectFrom('users').selectAll().where('id', '=', u.user.id).executeTakeFirstOrThrow());
    for (let i = 0; i < TFA_MAX_FAILED_ATTEMPTS + 2; i++) {
      await assert.rejects(verifier.verifyFactor(user, { tfa_method: 'totp', code: codeNow(app(), u.secret) }, '2fa_login_failed', ['login']), /database went away/);
    }
    const m = await store.findMethodById(u.methodId);
    assert.equal(m!.fail_count, 0);
    assert.equal(m!.locked_until, null);
  });
});
