/**
 * Sign-in with a second factor (issue 15; spec: 2FA endpoints, "Logged-out UI"): TOTP from an authenticator app,
 * an e-mailed code, a backup code; then the Account page lists the sessions and ends one.
 */
import { totpCode } from '../../src/tfa/totp.js';
import { expect, test, type Server } from './fixtures.js';

const PASSWORD = 'correct horse battery';

/** A user with TOTP on, set up through the API as the CLI would: `{secret, backupCodes}`. */
async function userWithTotp(server: Server, email: string) {
  const { api_key: key } = await server.api('POST', '/_emu/users', { email, password: PASSWORD });
  const start = await server.api('POST', '/api/v0/tfa/authorize-new-method/', { tfa_method: 'email' }, key);
  await server.api('PUT', '/api/v0/tfa/authorize-new-method/', { code: await server.lastCode(email), secret: start.secret }, key);
  const setup = await server.api('POST', '/api/v0/tfa/totp-setup/', {}, key);
  const { now } = await server.api('GET', '/_emu/clock');
  const done = await server.api('POST', '/api/v0/tfa/confirm-new/', { tfa_method: 'totp', code: totpCode(setup.secret, now), secret: setup.secret, label: 'phone app' }, key);
  await server.advance(30); // the code just used is spent
  return { key: key as string, secret: setup.secret as string, backupCodes: done.backup_codes as string[] };
}

async function passwordStep(page: import('@playwright/test').Page, email: string) {
  await page.goto('/login');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Log in' }).click();
  await expect(page.getByRole('heading', { name: 'Second factor' })).toBeVisible();
}

test('log in with TOTP; a wrong code is shown in the API\'s words; the Account page lists and ends sessions', async ({ page, server, screens, axe }) => {
  const email = 'totp@example.com';
  const { secret, key } = await userWithTotp(server, email);
  await passwordStep(page, email);
  await expect(page.getByRole('radio', { name: 'Authenticator app (phone app)' })).toBeChecked();
  await screens('second-factor');
  await axe();
  await page.getByLabel('Code', { exact: true }).fill('000000');
  await page.getByRole('button', { name: 'Verify' }).click();
  await expect(page.getByRole('alert')).toBeVisible();
  const { now } = await server.api('GET', '/_emu/clock');
  await page.getByLabel('Code', { exact: true }).fill(totpCode(secret, now));
  await page.getByRole('button', { name: 'Verify' }).click();
  await expect(page.getByRole('navigation', { name: 'Main' })).toBeVisible();

  // The session cookie is HttpOnly and SameSite=Strict: the page's script cannot read it.
  const cookies = await page.context().cookies();
  const session = cookies.find((c) => c.name === 'gpuplane_session');
  expect(session?.httpOnly).toBe(true);
  expect(session?.sameSite).toBe('Strict');
  expect(await page.evaluate(() => document.cookie)).not.toContain('gpuplane_session');

  // A second session (a CLI login completed with the next TOTP code), listed beside this one.
  await server.advance(30);
  const later = (await server.api('GET', '/_emu/clock')).now;
  await server.api('POST', '/api/v0/tfa/', { tfa_method: 'totp', code: totpCode(secret, later) }, key);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Account' }).click();
  await expect(page.getByRole('heading', { name: 'Sessions' })).toBeVisible();
  await expect(page.getByRole('cell', { name: 'CLI', exact: true })).toHaveCount(1);
  const current = page.getByRole('row').filter({ hasText: '(this one)' });
  await expect(current).toHaveCount(1);
  await expect(current).toContainText('browser');
  await screens('account');
  await axe();
  await current.getByRole('button', { name: /^End session/ }).click();
  // Ending the session in use signs this browser out.
  await expect(page.getByRole('button', { name: 'Log in' })).toBeVisible();
});

test('log in with an e-mailed code, and with a backup code', async ({ page, server }) => {
  const email = 'codes@example.com';
  const { backupCodes } = await userWithTotp(server, email);
  await passwordStep(page, email);
  await page.getByRole('radio', { name: 'E-mailed code' }).check();
  await expect(page.getByRole('button', { name: 'Verify' })).toBeDisabled();
  await page.getByRole('button', { name: 'Send code' }).click();
  await expect(page.getByRole('status')).toBeVisible();
  await page.getByLabel('Code', { exact: true }).fill(await server.lastCode(email));
  await page.getByRole('button', { name: 'Verify' }).click();
  await expect(page.getByRole('navigation', { name: 'Main' })).toBeVisible();
  await page.getByRole('button', { name: 'Sign out' }).click();
  // Signed out before the next login: a logout still in flight would answer with its cookie removal after the new
  // login's cookie was set, and clear it (seen once in CI under load).
  await expect(page.getByRole('button', { name: 'Log in' })).toBeVisible();

  await passwordStep(page, email);
  await page.getByRole('radio', { name: 'Backup code' }).check();
  await page.getByRole('textbox', { name: 'Backup code' }).fill(backupCodes[0]);
  await page.getByRole('button', { name: 'Verify' }).click();
  await expect(page.getByRole('navigation', { name: 'Main' })).toBeVisible();
});

test('log in with an SMS code sent on request', async ({ page, server }) => {
  const email = 'sms@example.com';
  const phone = '+442071230001';
  const { api_key: key } = await server.api('POST', '/_emu/users', { email, password: PASSWORD });
  const start = await server.api('POST', '/api/v0/tfa/authorize-new-method/', { tfa_method: 'email' }, key);
  await server.api('PUT', '/api/v0/tfa/authorize-new-method/', { code: await server.lastCode(email), secret: start.secret }, key);
  const sent = await server.api('POST', '/api/v0/tfa/sms/', { phone_number: phone }, key);
  await server.api('POST', '/api/v0/tfa/confirm-new/', { tfa_method: 'sms', code: await server.lastCode(phone), secret: sent.secret, phone_number: phone }, key);
  await server.advance(120); // past the SMS resend wait

  await passwordStep(page, email);
  const sms = page.getByRole('radio', { name: /^SMS to .*0001$/ });
  await expect(sms).toBeChecked();
  await page.getByRole('button', { name: 'Send code' }).click();
  await expect(page.getByRole('button', { name: 'Send again' })).toBeVisible();
  await page.getByLabel('Code', { exact: true }).fill(await server.lastCode(phone));
  await page.getByRole('button', { name: 'Verify' }).click();
  await expect(page.getByRole('navigation', { name: 'Main' })).toBeVisible();
});
