/**
 * Switching the console into a team's context (issue 15, Teams: "switching into a team's context"; contract §3 Team
 * context). A member switches in the header, sees the team's instance, then switches back on the Teams page.
 */
import { expect, logIn, test } from './fixtures.js';

test('a member switches into the team\'s context, sees its instance, and switches back', async ({ page, server, screens, axe }) => {
  const password = 'correct horse battery staple';
  const stamp = Date.now();
  // The owner's team, with an instance rented for the team (by the owner's team key).
  const owner = await server.api('POST', '/_emu/users', { email: `ctx-owner-${stamp}@example.com`, password, credit: 100 });
  const team = await server.api('POST', '/api/v0/team/', { team_name: 'Lab' }, owner.api_key);
  const ownerTeamKey = (await server.api('POST', '/api/v0/auth/apikeys/', { team_id: team.id, name: 'team' }, owner.api_key)).key;
  const { offers } = await server.api('POST', '/api/v0/bundles/', { rentable: { eq: true }, type: 'on-demand', limit: 1, order: [['dph_total', 'asc']] }, ownerTeamKey);
  const rent = await server.api('PUT', `/api/v0/asks/${offers[0].id}/`, { client_id: 'me', image: 'ubuntu:22.04', disk: 10 }, ownerTeamKey);
  const instanceId = String(rent.new_contract);
  // A member (role `member`), invited and accepted through the API, then signed in in the browser.
  const email = `ctx-member-${stamp}@example.com`;
  const member = await server.api('POST', '/_emu/users', { email, password, credit: 100 });
  await server.api('POST', `/api/v0/team/invite/?email=${encodeURIComponent(email)}&role=member`, undefined, owner.api_key);
  await server.api('POST', '/api/v0/team/invitations/accept/', { code: await server.lastCode(email) }, member.api_key);
  await logIn(page, email, password);
  await expect(page).toHaveURL(/\/instances$/);

  // Personal context: the team's instance is not the member's.
  const context = page.getByRole('banner').getByLabel('Context');
  await expect(context).toHaveValue('');
  await expect(page.getByText('You have no live instances', { exact: false })).toBeVisible();

  // Into the team's context from the header: the instances page now lists the team's instance.
  await context.selectOption({ label: 'Team Lab (member)' });
  await expect(context).toHaveValue(String(team.id));
  await expect(page.getByRole('link', { name: instanceId, exact: true })).toBeVisible();
  await screens('team-context-instances');
  await axe();

  // The Teams page says so, and shows the team (the member owns none: in the personal context it offers to create one).
  // A full page load: the context is the session's, kept by the server.
  await page.goto('/account/teams');
  await expect(page.getByRole('status').filter({ hasText: 'You are acting for team Lab as member' })).toBeVisible();
  await expect(page.getByRole('table', { name: 'Members' }).getByRole('cell', { name: email, exact: true })).toBeVisible();
  await screens('team-context-teams');
  await axe();

  // Back to the personal context.
  await page.getByRole('button', { name: 'Back to personal context' }).click();
  await expect(page.getByRole('status').filter({ hasText: 'You are acting in your personal context.' })).toBeVisible();
  await expect(page.getByText('You do not own a team.')).toBeVisible();
  await expect(context).toHaveValue('');
  await expect(page.getByRole('button', { name: 'Act for team Lab' })).toBeVisible();
  await page.getByRole('link', { name: 'Instances' }).click();
  await expect(page.getByText('You have no live instances', { exact: false })).toBeVisible();
});
