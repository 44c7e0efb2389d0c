/** Billing (issue 15): charges appear after the clock advances — table, tree, chart by type, CSV, invoices. */
import { readFileSync } from 'node:fs';
import { expect, test } from './fixtures.js';
import { userLoggedIn } from './helpers2.js';

test('rent, advance the clock, see the charges as table, tree and chart, export them as CSV', async ({ page, server, screens, axe }) => {
  const user = await userLoggedIn(page, server, { prefix: 'billing', credit: 500 });
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Billing', exact: true }).click();
  await expect(page.getByRole('heading', { name: 'Billing', level: 1 })).toBeVisible();
  await expect(page.getByTestId('credit')).toHaveText('$500.00');
  await expect(page.getByText('No charges in this range.')).toBeVisible();

  // A wrong range is shown beside its field.
  await page.getByLabel('From (UTC)').fill('2099-01-02');
  await page.getByLabel('To (UTC)').fill('2099-01-01');
  await page.getByRole('button', { name: 'Show charges' }).click();
  await expect(page.getByRole('alert')).toHaveText(/start date is after the end date/);

  const { offers } = await server.api('POST', '/api/v0/bundles/', { rentable: { eq: true }, type: 'on-demand', limit: 1, order: [['dph_total', 'asc']] }, user.key);
  const rent = await server.api('PUT', `/api/v0/asks/${offers[0].id}/`, { client_id: 'me', image: 'ubuntu:22.04', disk: 10 }, user.key);
  expect(rent.new_contract).toBeGreaterThan(0);
  await server.advance(3 * 3600);

  await page.reload();
  const table = page.getByRole('table', { name: 'Charges', exact: true });
  await expect(table.getByRole('cell', { name: `instance-${rent.new_contract}` })).toBeVisible();
  await expect(page.getByTestId('charges-total')).toHaveText(/^\$\d+\.\d+$/);
  expect(Number((await page.getByTestId('charges-total').textContent())!.slice(1))).toBeGreaterThan(0);
  // Spend per day: the chart and its numbers.
  await expect(page.getByRole('img', { name: /Spend per day by type/ })).toBeVisible();
  await page.getByText('Spend per day by type: the numbers').click();
  await expect(page.getByRole('table', { name: 'Spend per day by type' }).getByRole('columnheader', { name: 'Instances' })).toBeVisible();
  await screens('billing');
  await axe();

  // The tree: the contract with its items below it.
  await page.getByRole('button', { name: 'Tree' }).click();
  const tree = page.getByRole('table', { name: 'Charges tree' });
  const expand = tree.getByRole('button', { name: /^Expand / }).first();
  await expect(expand).toBeVisible();
  const rowsBefore = await tree.getByRole('row').count();
  await expand.click();
  await expect.poll(() => tree.getByRole('row').count()).toBeGreaterThan(rowsBefore);
  await screens('billing-tree');
  await axe();

  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()]);
  expect(download.suggestedFilename()).toMatch(/^charges-\d{4}-\d{2}-\d{2}-\d{4}-\d{2}-\d{2}\.csv$/);
  const csv = readFileSync((await download.path())!, 'utf8');
  expect(csv.split('\r\n')[0]).toBe('start,end,type,source,description,amount,parent');
  expect(csv).toContain(`instance-${rent.new_contract}`);

  // Credit went down by what was charged.
  await page.getByRole('button', { name: 'Refresh' }).click();
  await expect(page.getByTestId('credit')).not.toHaveText('$500.00');
});
