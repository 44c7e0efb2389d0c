/**
 * Emulator panel (issue 15; contract §2): the reset button, after its confirmation, empties what was made — accounts and
 * their keys (the admin who pressed it included: the console is back at sign-in) and the outbox — while the
 * bootstrap key keeps working. Its own file: a reset empties the whole server this file shares.
 */
import { expect, test } from './fixtures.js';
import { userLoggedIn } from './helpers2.js';

async function status(url: string, path: string, key: string): Promise<number> {
  return (await fetch(url + path, { headers: { authorization: `Bearer ${key}` } })).status;
}

test('reset (confirmed) empties accounts, their keys and the outbox', async ({ page, server, screens, axe }) => {
  // Things to be removed: another user and a code e-mailed to them.
  const other = await server.api('POST', '/_emu/users', { email: `reset-other-${Date.now()}@example.com`, password: 'correct horse battery staple' });
  await server.api('POST', '/api/v0/tfa/email/', {}, other.api_key);
  expect((await server.api('GET', `/_emu/outbox?to=${encodeURIComponent(other.user.email)}`)).messages).toHaveLength(1);

  const admin = await userLoggedIn(page, server, { admin: true, prefix: 'reset-admin' });
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Emulator' }).click();
  await expect(page.getByRole('heading', { name: 'Emulator', level: 1 })).toBeVisible();

  // Cancelling the confirmation changes nothing.
  await page.getByRole('button', { name: 'Reset emulator' }).click();
  const confirm = page.getByRole('dialog', { name: 'Reset the emulator' });
  await expect(confirm).toBeVisible();
  await screens('emulator-reset-confirm');
  await axe();
  await confirm.getByRole('button', { name: 'Cancel' }).click();
  await expect(confirm).toBeHidden();
  expect(await status(server.url, '/api/v0/users/current/', other.api_key)).toBe(200);

  await page.getByRole('button', { name: 'Reset emulator' }).click();
  await confirm.getByRole('button', { name: 'Reset', exact: true }).click();
  // The admin's own account went with it: the console is signed out.
  await expect(page.getByRole('button', { name: 'Log in' })).toBeVisible();

  // What the API says: the accounts and their keys are gone, the outbox is empty, the bootstrap key still works.
  expect(await status(server.url, '/api/v0/users/current/', other.api_key)).toBe(401);
  expect(await status(server.url, '/api/v0/users/current/', admin.key)).toBe(401);
  expect((await server.api('GET', `/_emu/outbox?to=${encodeURIComponent(other.user.email)}`)).messages).toEqual([]);
  expect((await server.api('GET', `/_emu/outbox?to=${encodeURIComponent(admin.email)}`)).messages).toEqual([]);
  expect(await status(server.url, '/api/v0/users/current/', server.adminKey)).toBe(200);
  // The old account cannot sign in any more.
  await page.getByLabel('Email').fill(admin.email);
  await page.getByLabel('Password').fill(admin.password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await expect(page.getByRole('alert')).toBeVisible();
});
