/** Machines (issue 15: Hosts): a host sees its machine, lists it with prices, schedules maintenance, unlists it. */
import { expect, test } from './fixtures.js';
import { userLoggedIn } from './helpers2.js';

test('list a machine as a host, with prices; maintenance; unlist', async ({ page, server, screens, axe }) => {
  const host = await userLoggedIn(page, server, { prefix: 'host' });
  const nav = page.getByRole('navigation', { name: 'Main' });
  await expect(nav.getByRole('link', { name: 'Machines' })).toHaveCount(0);
  const { machine_id } = await server.api('POST', '/_emu/machines', { num_gpus: 2, gpu_name: 'RTX 4090', price_gpu: 0.5, owner_user_id: host.id });
  await page.reload();
  await nav.getByRole('link', { name: 'Machines' }).click();
  const card = page.getByRole('article', { name: new RegExp(`^Machine ${machine_id}:`) });
  await expect(card).toBeVisible();
  await expect(card.getByText('2 idle')).toBeVisible();
  await axe();

  const listButton = card.getByRole('button', { name: new RegExp(`^(List|Change listing of) machine ${machine_id}$`) });
  await listButton.click();
  const dialog = page.getByRole('dialog', { name: `List machine ${machine_id}` });
  await dialog.getByLabel('GPU price ($/GPU/hour)').fill('-3');
  await dialog.getByRole('button', { name: 'List machine' }).click();
  await expect(dialog.getByText('Enter a price in dollars, 0 or more.')).toBeVisible();
  await dialog.getByLabel('GPU price ($/GPU/hour)').fill('0.45');
  await dialog.getByLabel('Minimum bid ($/GPU/hour)').fill('0.2');
  await dialog.getByRole('button', { name: 'List machine' }).click();
  await expect(dialog).toBeHidden();
  await expect(card.getByText('Listed', { exact: true })).toBeVisible();
  await expect(card.getByText(/Listed at \$0\.45\/GPU\/hour/)).toBeVisible();
  const { machines } = await server.api('GET', '/api/v0/machines?owner=me', undefined, host.key);
  expect(machines.find((m: any) => m.id === machine_id)).toMatchObject({ listed: true, listed_gpu_cost: 0.45 });

  await card.getByRole('button', { name: `Schedule maintenance of machine ${machine_id}` }).click();
  const mdialog = page.getByRole('dialog', { name: `Maintenance of machine ${machine_id}` });
  await mdialog.getByLabel('Duration (hours)').fill('3');
  await mdialog.getByRole('button', { name: 'Schedule maintenance' }).click();
  await expect(mdialog).toBeHidden();
  await expect(card.getByRole('heading', { name: 'Maintenance windows' })).toBeVisible();
  await expect(card.getByText(/\(3 h,/)).toBeVisible();
  await expect(page.getByRole('img', { name: /Earnings per day/ })).toBeVisible();
  await screens('machines');
  await axe();

  await card.getByRole('button', { name: `Unlist machine ${machine_id}` }).click();
  await page.getByRole('dialog', { name: 'Unlist machine' }).getByRole('button', { name: 'Unlist' }).click();
  await expect(card.getByText('Not listed: renters cannot find it.')).toBeVisible();
});
