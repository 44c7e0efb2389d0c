/**
 * The Instances page says what is true (issue 29 item 9): one instance is "1 instance", a provisioning instance reads
 * "provisioning" (the spec's null state), never "none", and after a destroy the page says the instance was destroyed
 * and that no live instance is left, never "No instances yet".
 */
import { expect, test } from './fixtures.js';
import { userLoggedIn } from './helpers2.js';

test('one provisioning instance, then destroyed: the words on the page stay true', async ({ page, server, screens, axe }) => {
  const me = await userLoggedIn(page, server, { prefix: 'words' });
  const { offers } = await server.api('POST', '/api/v0/bundles/', { num_gpus: { eq: 1 }, rentable: { eq: true }, rented: { eq: false }, limit: 1 }, me.key);
  const { new_contract: id } = await server.api('PUT', `/api/v0/asks/${offers[0].id}/`, { client_id: 'me', image: 'busybox:latest', disk: 8 }, me.key);

  await page.goto('/instances');
  const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: String(id), exact: true }) });
  await expect(row).toBeVisible();
  await expect(page.getByText('1 instance, updated live')).toBeVisible();
  // The clock has not moved: the host has not reported it yet, so it is being provisioned.
  await expect(row.getByText('provisioning', { exact: true })).toBeVisible();
  await expect(row.getByText('none', { exact: true })).toHaveCount(0);
  await screens('instances-provisioning');
  await axe();

  await row.getByRole('link', { name: String(id), exact: true }).click();
  const detail = page.getByRole('region', { name: new RegExp(`Instance ${id}`) });
  await detail.getByRole('button', { name: 'Destroy' }).click();
  await page.getByRole('dialog', { name: `Destroy instance ${id}` }).getByRole('button', { name: 'Destroy' }).click();
  await expect(page.getByRole('status')).toHaveText(`Instance ${id} destroyed: its disk is gone and its billing has stopped.`);
  await expect(page.getByText(/^You have no live instances/)).toBeVisible();
  await expect(page.getByText('No instances yet')).toHaveCount(0);
  await screens('instances-after-destroy');
  await axe();
});
