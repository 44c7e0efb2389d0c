/** Keys (issue 15): create a scoped key (its secret shown once, with a copy button), its scope holds, revoke it. */
import { expect, test } from './fixtures.js';
import { userLoggedIn } from './helpers2.js';

test('create a scoped key: shown once, only its categories work, then revoke it', async ({ page, server, screens, axe }) => {
  await userLoggedIn(page, server, { prefix: 'keys' });
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Keys', exact: true }).click();
  await expect(page.getByRole('heading', { name: 'Keys', level: 1 })).toBeVisible();
  await axe();

  await page.getByLabel('Key name').fill('ci reader');
  await page.getByRole('button', { name: 'Clear all' }).click();
  await page.getByRole('checkbox', { name: /instance_read/ }).check();
  await page.getByRole('button', { name: 'Create key' }).click();

  const secretEl = page.getByLabel('New key secret');
  await expect(secretEl).toBeVisible();
  const secret = (await secretEl.textContent())!.trim();
  expect(secret.length).toBeGreaterThan(20);
  await expect(page.getByRole('button', { name: 'Copy the new key' })).toBeVisible();
  await expect(page.getByRole('table').getByRole('cell', { name: 'instance_read', exact: true })).toBeVisible();
  await screens('keys');
  await axe();

  // The scope holds on the server: instances can be read, the account cannot.
  const instances = await fetch(`${server.url}/api/v0/instances/`, { headers: { authorization: `Bearer ${secret}` } });
  expect(instances.status).toBe(200);
  const me = await fetch(`${server.url}/api/v0/users/current/`, { headers: { authorization: `Bearer ${secret}` } });
  expect(me.status).toBe(403);

  // Shown once: after a reload the secret is nowhere on the page.
  await page.reload();
  await expect(page.getByRole('cell', { name: 'ci reader', exact: true })).toBeVisible();
  await expect(page.getByText(secret)).toHaveCount(0);

  await page.getByRole('button', { name: 'Revoke key ci reader' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
  await expect(page.getByRole('cell', { name: 'ci reader', exact: true })).toHaveCount(0);
  const after = await fetch(`${server.url}/api/v0/instances/`, { headers: { authorization: `Bearer ${secret}` } });
  expect(after.status).toBe(401);
});
