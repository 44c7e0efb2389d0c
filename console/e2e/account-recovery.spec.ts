/**
 * Getting back into an account from the console (issue 29 items 7 and 9): an address verified later from the login
 * page, a forgotten password reset by an e-mailed code, a password change, and schema messages shown as sentences.
 */
import { totpCode } from '../../src/tfa/totp.js';
import { expect, logIn, test } from './fixtures.js';
import { userLoggedIn } from './helpers2.js';

let n = 0;
const email = (what: string) => `${what}${++n}-${Date.now()}@example.com`;

test('sign up, leave, come back later: the login page asks for the e-mailed code and then logs in', async ({ page, server, screens, axe }) => {
  const addr = email('later');
  await page.goto('/signup');
  await page.getByLabel('Email').fill(addr);
  await page.getByLabel('Password').fill('short');
  await page.getByRole('button', { name: 'Create account' }).click();
  await expect(page.getByRole('alert')).toHaveText(/^⚠ Password must be at least 8 characters long\.$/);
  await page.getByLabel('Password').fill('correct horse battery');
  await page.getByRole('button', { name: 'Create account' }).click();
  await expect(page.getByRole('heading', { name: 'Verify your e-mail' })).toBeVisible();

  // A reload loses the sign-up page's step; the login page picks it up.
  await page.goto('/login');
  await page.getByLabel('Email').fill(addr);
  await page.getByLabel('Password').fill('correct horse battery');
  await page.getByRole('button', { name: 'Log in' }).click();
  await expect(page.getByRole('heading', { name: 'Verify your e-mail' })).toBeVisible();
  await page.getByRole('button', { name: 'Send a new code' }).click();
  await expect(page.getByRole('status')).toContainText('A new code is on its way');
  await screens('login-verify-email');
  await axe();
  await page.getByLabel('Verification code').fill(await server.lastCode(addr));
  await page.getByRole('button', { name: 'Verify and log in' }).click();
  await expect(page.getByRole('navigation', { name: 'Main' })).toBeVisible();
});

test('a forgotten password: a code by e-mail, a new password, then log in with it', async ({ page, server, screens, axe }) => {
  const addr = email('forgot');
  await server.api('POST', '/_emu/users', { email: addr, password: 'the old password' });
  await page.goto('/login');
  await page.getByRole('link', { name: 'Forgot your password?' }).click();
  await expect(page.getByRole('heading', { name: 'Reset your password' })).toBeVisible();
  await page.getByLabel('Email').fill(addr);
  await page.getByRole('button', { name: 'E-mail me a code' }).click();
  await expect(page.getByRole('status')).toContainText('a reset code is on its way');
  await screens('reset-password');
  await axe();
  await page.getByLabel('Code from the e-mail').fill(await server.lastCode(addr));
  await page.getByLabel('New password').fill('the new password');
  await page.getByRole('button', { name: 'Set the new password' }).click();
  await expect(page.getByText('Password changed: log in with the new one.')).toBeVisible();
  await logIn(page, addr, 'the new password');
});

test('change the password on the Security page; the new one logs in', async ({ page, server }) => {
  const me = await userLoggedIn(page, server, { prefix: 'change' });
  await page.goto('/account/security');
  await page.getByLabel('Current password').fill('not my password');
  await page.getByLabel('New password').fill('a better password');
  await page.getByRole('button', { name: 'Change password' }).click();
  await expect(page.getByRole('alert')).toHaveText(/current password is wrong/);
  await page.getByLabel('Current password').fill(me.password);
  await page.getByRole('button', { name: 'Change password' }).click();
  await expect(page.getByRole('status')).toContainText('password changed');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await logIn(page, me.email, 'a better password');
});

test('with 2FA on, a password change asks for the second factor too', async ({ page, server, screens, axe }) => {
  const addr = email('tfa');
  const { api_key: key } = await server.api('POST', '/_emu/users', { email: addr, password: 'correct horse battery' });
  const start = await server.api('POST', '/api/v0/tfa/authorize-new-method/', { tfa_method: 'email' }, key);
  await server.api('PUT', '/api/v0/tfa/authorize-new-method/', { code: await server.lastCode(addr), secret: start.secret }, key);
  const setup = await server.api('POST', '/api/v0/tfa/totp-setup/', {}, key);
  const { now } = await server.api('GET', '/_emu/clock');
  const done = await server.api('POST', '/api/v0/tfa/confirm-new/', { tfa_method: 'totp', code: totpCode(setup.secret, now), secret: setup.secret, label: 'phone app' }, key);
  await server.advance(30);

  await page.goto('/login');
  await page.getByLabel('Email').fill(addr);
  await page.getByLabel('Password').fill('correct horse battery');
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('radio', { name: 'Backup code' }).check();
  await page.getByRole('textbox', { name: 'Backup code' }).fill(done.backup_codes[0]);
  await page.getByRole('button', { name: 'Verify' }).click();
  await expect(page.getByRole('navigation', { name: 'Main' })).toBeVisible();

  await page.goto('/account/security');
  await page.getByLabel('Current password').fill('correct horse battery');
  await page.getByLabel('New password').fill('an even better password');
  await page.getByRole('button', { name: 'Change password' }).click();
  const dialog = page.getByRole('dialog', { name: 'Change password' });
  await expect(dialog).toBeVisible();
  await screens('change-password-second-factor');
  await axe();
  await dialog.getByRole('radio', { name: 'Backup code' }).check();
  await dialog.getByRole('textbox', { name: 'Backup code' }).fill(done.backup_codes[1]);
  await dialog.getByRole('button', { name: 'Change password' }).click();
  await expect(page.getByRole('status').filter({ hasText: 'password changed' })).toBeVisible();
});
