/**
 * Security settings (issue 15), the flows security.spec.ts leaves out: adding an SMS number (its code from the
 * emulator's outbox), making it the primary method, and new backup codes (shown once, the old ones spent). Each step is
 * checked against what the API then says (GET /api/v0/tfa/status/ with the user's key).
 */
import { totpCode } from '../../src/tfa/totp.js';
import { expect, test } from './fixtures.js';
import { userLoggedIn } from './helpers2.js';

test('add an SMS number, make it primary, make new backup codes', async ({ page, server, screens, axe }) => {
  const user = await userLoggedIn(page, server, { prefix: 'sms' });
  // A first method (TOTP), set up through the API as the CLI would; its backup codes are the "old" ones.
  const start = await server.api('POST', '/api/v0/tfa/authorize-new-method/', { tfa_method: 'email' }, user.key);
  await server.api('PUT', '/api/v0/tfa/authorize-new-method/', { code: await server.lastCode(user.email), secret: start.secret }, user.key);
  const setup = await server.api('POST', '/api/v0/tfa/totp-setup/', {}, user.key);
  const { now } = await server.api('GET', '/_emu/clock');
  const first = await server.api('POST', '/api/v0/tfa/confirm-new/', { tfa_method: 'totp', code: totpCode(setup.secret, now), secret: setup.secret, label: 'phone app' }, user.key);
  const oldCodes: string[] = first.backup_codes;
  // Past the 30-minute window of that authorization: adding the SMS number must be authorized again.
  await server.advance(31 * 60);

  await page.goto('/account/security');
  await expect(page.getByText('Status: On')).toBeVisible();
  await page.getByRole('button', { name: 'Add SMS number' }).click();
  const dialog = page.getByRole('dialog', { name: 'Add an SMS number' });
  // Authorized with an (old) backup code.
  await dialog.getByRole('radio', { name: 'Backup code' }).check();
  await dialog.getByRole('textbox', { name: 'Backup code' }).fill(oldCodes[0]!);
  await dialog.getByRole('button', { name: 'Confirm it is me' }).click();
  const phone = '+442071230002';
  await dialog.getByLabel('Phone number').fill(phone);
  await dialog.getByRole('button', { name: 'Send code' }).click();
  await dialog.getByLabel('Method name').fill('work phone');
  await dialog.getByLabel('Code from the SMS').fill('000000');
  await dialog.getByRole('button', { name: 'Add phone' }).click();
  await expect(dialog.getByRole('alert')).toBeVisible();
  await dialog.getByLabel('Code from the SMS').fill(await server.lastCode(phone));
  await screens('security-sms');
  await axe();
  await dialog.getByRole('button', { name: 'Add phone' }).click();
  await expect(dialog).toBeHidden();
  await expect(page.getByRole('status').filter({ hasText: 'SMS number added.' })).toBeVisible();
  const methods = page.getByRole('table', { name: 'Two-factor methods' });
  await expect(methods.getByRole('row', { name: /work phone/ })).toContainText(/SMS \+\*+0002/); // the number is shown masked

  let status = await server.api('GET', '/api/v0/tfa/status/', undefined, user.key);
  const sms = status.methods.find((m: any) => m.method === 'sms');
  expect(sms).toMatchObject({ label: 'work phone', is_primary: false });
  expect(sms.phone_number).toMatch(/0002$/);
  expect(status.methods.find((m: any) => m.method === 'totp').is_primary).toBe(true);
  expect(status.backup_codes_remaining).toBe(oldCodes.length - 1);

  // The SMS number becomes the primary method.
  await methods.getByRole('button', { name: 'Make work phone primary' }).click();
  await expect(methods.getByRole('row', { name: /work phone/ })).toContainText('Primary');
  await expect(methods.getByRole('button', { name: 'Make phone app primary' })).toBeVisible();
  status = await server.api('GET', '/api/v0/tfa/status/', undefined, user.key);
  expect(status.methods.find((m: any) => m.method === 'sms').is_primary).toBe(true);
  expect(status.methods.find((m: any) => m.method === 'totp').is_primary).toBe(false);

  // New backup codes, verified by an e-mailed code: ten, shown once; the old ones stop working.
  await page.getByRole('button', { name: 'New backup codes' }).click();
  const regen = page.getByRole('dialog', { name: 'New backup codes' });
  await regen.getByRole('radio', { name: 'E-mail code' }).check();
  await regen.getByRole('button', { name: 'Send code' }).click();
  await expect(regen.getByRole('status')).toHaveText('Code sent to your e-mail address.');
  await regen.getByLabel('Verification code').fill(await server.lastCode(user.email));
  await regen.getByRole('button', { name: 'Make new codes' }).click();
  await expect(regen).toBeHidden();
  const list = page.getByRole('list', { name: 'Backup code list' });
  await expect(list.getByRole('listitem')).toHaveCount(10);
  const newCodes = (await list.getByRole('listitem').allTextContents()).map((c) => c.trim());
  expect(newCodes.filter((c) => oldCodes.includes(c))).toEqual([]);
  await screens('security-new-codes');
  await axe();
  status = await server.api('GET', '/api/v0/tfa/status/', undefined, user.key);
  expect(status.backup_codes_remaining).toBe(10);
  // An old code is refused; a new one is accepted (authorizing a new method with it).
  await expect(server.api('POST', '/api/v0/tfa/authorize-new-method/', { backup_code: oldCodes[1] }, user.key)).rejects.toThrow(/40\d/);
  await server.api('POST', '/api/v0/tfa/authorize-new-method/', { backup_code: newCodes[0] }, user.key);
  // Shown once: gone after "I have saved them", and not back on reload.
  await page.getByRole('button', { name: 'I have saved them' }).click();
  await expect(list).toHaveCount(0);
  await page.reload();
  await expect(page.getByRole('heading', { name: 'Security settings', level: 1 })).toBeVisible();
  await expect(page.getByRole('list', { name: 'Backup code list' })).toHaveCount(0);
});
