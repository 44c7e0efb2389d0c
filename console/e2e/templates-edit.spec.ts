/**
 * Templates (issue 15), the flows templates.spec.ts leaves out: editing a template and deleting it (with its
 * confirmation), and creating a volume from an offer the Volumes page lists. Each step is checked against what the API
 * then says, through the SDK with the user's key.
 */
import { createClient } from '../../src/sdk/client.js';
import { expect, test } from './fixtures.js';
import { userLoggedIn } from './helpers2.js';

test('edit a template, then delete it', async ({ page, server, screens, axe }) => {
  const user = await userLoggedIn(page, server, { prefix: 'tpledit' });
  const sdk = createClient({ url: server.url, apiKey: user.key });
  const mine = async () => (await sdk.templates.search()).templates.filter((t) => t.creator_id === user.id);
  await page.goto('/templates');
  await page.getByLabel('Template name').fill('draft');
  await page.getByLabel('Image', { exact: true }).fill('ubuntu');
  await page.getByRole('button', { name: 'Create template' }).click();
  const table = page.getByRole('table', { name: 'Templates' });
  await expect(table.getByRole('cell', { name: 'draft', exact: true })).toBeVisible();
  const [created] = await mine();
  expect(created).toMatchObject({ name: 'draft', image: 'ubuntu' });

  await table.getByRole('button', { name: 'Edit draft' }).click();
  const form = page.getByRole('form', { name: 'Edit template' });
  await expect(page.getByRole('heading', { name: 'Edit template draft' })).toBeVisible();
  await expect(form.getByLabel('Template name')).toHaveValue('draft');
  await form.getByLabel('Template name').fill('trainer');
  await form.getByLabel('Image', { exact: true }).fill('pytorch/pytorch');
  await form.getByLabel('Tag').fill('2.3.0');
  await form.getByLabel('On-start script').fill('python train.py');
  await screens('template-edit');
  await axe();
  await form.getByRole('button', { name: 'Save template' }).click();
  await expect(table.getByRole('cell', { name: 'trainer', exact: true })).toBeVisible();
  await expect(table.getByRole('cell', { name: 'draft', exact: true })).toHaveCount(0);
  await expect(page.getByRole('form', { name: 'Create a template' })).toBeVisible();
  const edited = await mine();
  expect(edited).toHaveLength(1);
  expect(edited[0]).toMatchObject({ name: 'trainer', image: 'pytorch/pytorch', tag: '2.3.0', onstart: 'python train.py' });

  // Delete: cancelling keeps it; confirming removes it.
  await table.getByRole('button', { name: 'Delete template trainer' }).click();
  const confirm = page.getByRole('dialog', { name: 'Delete template trainer' });
  await confirm.getByRole('button', { name: 'Cancel' }).click();
  await expect(confirm).toBeHidden();
  expect(await mine()).toHaveLength(1);
  await table.getByRole('button', { name: 'Delete template trainer' }).click();
  await axe();
  await confirm.getByRole('button', { name: 'Delete', exact: true }).click();
  await expect(page.getByText('No templates of yours yet.')).toBeVisible();
  expect(await mine()).toEqual([]);
});

test('create a volume from an offer the page lists', async ({ page, server, screens, axe }) => {
  const user = await userLoggedIn(page, server, { prefix: 'vol', credit: 500 });
  const sdk = createClient({ url: server.url, apiKey: user.key });
  await page.goto('/templates/volumes');
  await expect(page.getByText('No volumes yet.')).toBeVisible();
  const select = page.getByLabel('Volume offer');
  // The first real offer of the select (after "Choose an offer").
  const option = select.getByRole('option').nth(1);
  await expect(option).toBeAttached();
  const offerId = Number(await option.getAttribute('value'));
  const machine = Number(/machine (\d+)/.exec((await option.textContent())!)![1]);
  await select.selectOption(String(offerId));
  await page.getByLabel('Size (GB)').fill('20');
  await page.getByLabel('Volume name').fill('datasets');
  await page.getByRole('button', { name: 'Create volume' }).click();
  const table = page.getByRole('table', { name: 'Volumes' });
  const row = table.getByRole('row', { name: /datasets/ });
  await expect(row).toBeVisible();
  await expect(row).toContainText('20 GB');
  await expect(row).toContainText('Ready');
  await screens('volumes-created');
  await axe();
  const { volumes } = await sdk.volumes.list();
  expect(volumes).toHaveLength(1);
  expect(volumes[0]).toMatchObject({ name: 'datasets', size: 20, machine_id: machine });
  await expect(row.getByRole('cell', { name: String(volumes[0]!.id), exact: true })).toBeVisible();
});
