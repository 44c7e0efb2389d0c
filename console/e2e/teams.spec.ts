/** Teams (issue 15): create a team, a role with its permissions, invite a member, and a key for the team context. */
import { expect, test } from './fixtures.js';
import { userLoggedIn } from './helpers2.js';

test('create a team, a role, invite someone, make a team key', async ({ page, server, screens, axe }) => {
  const owner = await userLoggedIn(page, server, { prefix: 'owner' });
  await page.goto('/account/teams');
  await expect(page.getByRole('heading', { name: 'Teams', level: 1 })).toBeVisible();
  await page.getByLabel('Team name').fill('Lab');
  await page.getByRole('button', { name: 'Create team' }).click();
  await expect(page.getByText(/Team Lab \(#\d+\)/)).toBeVisible();
  await expect(page.getByRole('table', { name: 'Members' }).getByRole('cell', { name: owner.email })).toBeVisible();

  await page.getByLabel('Role name').fill('viewer');
  await page.getByRole('button', { name: 'Create role' }).click();
  const roles = page.getByRole('table', { name: 'Roles' });
  await expect(roles.getByRole('cell', { name: 'viewer', exact: true })).toBeVisible();
  await expect(roles.getByRole('row', { name: /viewer/ })).toContainText('instance_read');

  await page.getByLabel('E-mail to invite').fill('friend@example.com');
  await page.getByLabel('Role', { exact: true }).selectOption('viewer');
  await page.getByRole('button', { name: 'Invite' }).click();
  await expect(page.getByText('Invitation sent to friend@example.com.')).toBeVisible();
  await expect(page.getByText(/friend@example\.com as viewer/)).toBeVisible();

  await page.getByRole('button', { name: 'Create a key for this team' }).click();
  await expect(page.getByRole('button', { name: 'Copy the team key' })).toBeVisible();
  await screens('teams');
  await axe();
});
