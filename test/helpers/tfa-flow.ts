/** Shared steps of the 2FA and login tests: read codes from the outbox, authorize, add methods. */
import assert from 'node:assert/strict';
import type { TestApp } from './harness.js';
import { totpCode } from '../../src/tfa/totp.js';

/** The newest code the emulator "sent" to `to` on `channel`. */
export async function lastCode(app: TestApp, to: string, channel: 'email' | 'sms'): Promise<string> {
  const res = await app.request('GET', '/_emu/outbox', { query: { to, channel } });
  assert.equal(res.status, 200);
  const msgs = res.body.messages;
  assert.ok(msgs.length > 0, `no ${channel} to ${to}`);
  return msgs[msgs.length - 1].code;
}

export async function outboxCount(app: TestApp, to: string, channel: 'email' | 'sms'): Promise<number> {
  const res = await app.request('GET', '/_emu/outbox', { query: { to, channel } });
  return res.body.messages.length;
}

/** Opens the add-method window with an e-mail code (first-time setup). */
export async function authorizeByEmail(app: TestApp, key: string, email: string): Promise<void> {
  const start = await app.request('POST', '/api/v0/tfa/authorize-new-method/', { key, body: { tfa_method: 'email' } });
  assert.equal(start.status, 200, start.raw);
  const code = await lastCode(app, email, 'email');
  const fin = await app.request('PUT', '/api/v0/tfa/authorize-new-method/', { key, body: { code, secret: start.body.secret } });
  assert.equal(fin.status, 200, fin.raw);
}

/** TOTP code for the app's current (virtual) time, shifted by `steps` periods. */
export function codeNow(app: TestApp, secret: string, steps = 0): string {
  return totpCode(secret, app.clock.now() + steps * 30);
}

/** A user with TOTP enabled: `{key, user, secret, methodId, backupCodes}`. */
export async function userWithTotp(app: TestApp, extra: Record<string, unknown> = {}) {
  const { user, api_key: key } = await app.createUser(extra);
  await authorizeByEmail(app, key, user.email);
  const setup = await app.request('POST', '/api/v0/tfa/totp-setup/', { key });
  assert.equal(setup.status, 200, setup.raw);
  const secret: string = setup.body.secret;
  const res = await app.request('POST', '/api/v0/tfa/confirm-new/', { key, body: { tfa_method: 'totp', code: codeNow(app, secret), secret, label: 'phone app' } });
  assert.equal(res.status, 200, res.raw);
  const status = await app.request('GET', '/api/v0/tfa/status/', { key });
  const methodId: number = status.body.methods.find((m: any) => m.method === 'totp').id;
  // The code just used is spent: move on one TOTP step so the next code is fresh.
  await app.advance(30);
  return { key, user, secret, methodId, backupCodes: res.body.backup_codes as string[] };
}

/** Adds an SMS method for `phone` (opening the window by e-mail first if asked). */
export async function addSms(app: TestApp, key: string, email: string, phone: string, authorize = true): Promise<number> {
  if (authorize) await authorizeByEmail(app, key, email);
  const sent = await app.request('POST', '/api/v0/tfa/sms/', { key, body: { phone_number: phone } });
  assert.equal(sent.status, 200, sent.raw);
  const code = await lastCode(app, phone, 'sms');
  const res = await app.request('POST', '/api/v0/tfa/confirm-new/', { key, body: { tfa_method: 'sms', code, secret: sent.body.secret, phone_number: phone } });
  assert.equal(res.status, 200, res.raw);
  const status = await app.request('GET', '/api/v0/tfa/status/', { key });
  return status.body.methods.find((m: any) => m.method === 'sms' && m.phone_number.endsWith(phone.slice(-4))).id;
}

let phoneCounter = 0;
/** A fresh, unblocked E.164 number per call (the per-number limits stay out of the way). */
export function newPhone(): string {
  phoneCounter++;
  return `+4420${String(process.pid % 10000).padStart(4, '0')}${String(phoneCounter).padStart(4, '0')}`;
}
