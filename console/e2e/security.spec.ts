/** Security settings (issue 15): add TOTP from the QR page's secret, backup codes shown once, remove it again. */
import { generateSync } from 'otplib';
import { readFileSync } from 'node:fs';
import { expect, test } from './fixtures.js';
import { serverNow, userLoggedIn } from './helpers2.js';

/** The TOTP code at the server's (virtual) time. */
async function totpNow(server: Parameters<typeof serverNow>[0], secret: string): Promise<string> {
  return generateSync({ secret, epoch: await serverNow(server), period: 30, digits: 6, algorithm: 'sha1' });
}

test('add and remove a 2FA method: TOTP with a QR code, backup codes once, the audit log', async ({ page, server, screens, axe }) => {
  const user = await userLoggedIn(page, server, { prefix: 'sec' });
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Account', exact: true }).click();
  await page.getByRole('link', { name: 'Security settings' }).click();
  await expect(page.getByRole('heading', { name: 'Security settings', level: 1 })).toBeVisible();
  await expect(page.getByText('Status: Off')).toBeVisible();
  await axe();

  await page.getByRole('button', { name: 'Add authenticator app' }).click();
  const dialog = page.getByRole('dialog', { name: 'Add an authenticator app' });
  // First method: authorized by a code e-mailed to the account; a wrong code is shown beside the field.
  await dialog.getByRole('button', { name: 'Send code' }).click();
  await expect(dialog.getByRole('status').filter({ hasText: 'Code sent to your e-mail address.' })).toBeVisible();
  await dialog.getByLabel('Verification code').fill('000000');
  await dialog.getByRole('button', { name: 'Confirm it is me' }).click();
  await expect(dialog.getByRole('alert')).toBeVisible();
  await dialog.getByLabel('Verification code').fill(await server.lastCode(user.email));
  await dialog.getByRole('button', { name: 'Confirm it is me' }).click();
  await dialog.getByRole('button', { name: 'Show QR code' }).click();
  await expect(dialog.getByRole('img', { name: 'QR code of the authenticator secret' })).toBeVisible();
  const secret = (await dialog.getByTestId('totp-secret').textContent())!.trim();
  await screens('security-totp');
  await axe();
  await dialog.getByLabel('Code from the app').fill(await totpNow(server, secret));
  await dialog.getByRole('button', { name: 'Add authenticator' }).click();

  // Backup codes: ten, shown once, downloadable.
  const codes = page.getByRole('list', { name: 'Backup code list' });
  await expect(codes.getByRole('listitem')).toHaveCount(10);
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download backup codes' }).click()]);
  const file = readFileSync((await download.path())!, 'utf8');
  expect(file.match(/^[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}$/gm)).toHaveLength(10);
  await expect(page.getByText('Status: On')).toBeVisible();
  await expect(page.getByRole('table', { name: 'Two-factor methods' }).getByRole('cell', { name: 'Authenticator app' }).first()).toBeVisible();
  await screens('security');
  await axe();
  await page.getByRole('button', { name: 'I have saved them' }).click();
  await page.reload();
  await expect(page.getByRole('list', { name: 'Backup code list' })).toHaveCount(0);

  // Remove it, verified by a fresh TOTP code (the next 30-second step, so it is not a replay).
  await server.advance(60);
  await page.getByRole('button', { name: /^Remove Authenticator app/ }).click();
  const remove = page.getByRole('dialog', { name: /^Remove / });
  await remove.getByLabel('Verification code').fill(await totpNow(server, secret));
  await remove.getByRole('button', { name: 'Remove method' }).click();
  await expect(remove).toBeHidden();
  await expect(page.getByText('Status: Off')).toBeVisible();
  await expect(page.getByText('No methods yet.')).toBeVisible();
  await expect(page.getByRole('table', { name: 'Audit log' })).toBeVisible();
});
