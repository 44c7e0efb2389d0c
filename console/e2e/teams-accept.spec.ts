/**
 * Teams (issue 15; contract §3 Teams): an invited user accepts the invitation on the Teams page with the code from
 * the invitation e-mail (the emulator's outbox), and the team is then theirs to switch into. Checked against the API.
 */
import { createClient } from '../../src/sdk/client.js';
import { expect, logIn, test } from './fixtures.js';

test('an invited user accepts the invitation with the e-mailed code', async ({ page, server, screens, axe }) => {
  const password = 'correct horse battery staple';
  const stamp = Date.now();
  const owner = await server.api('POST', '/_emu/users', { email: `inv-owner-${stamp}@example.com`, password });
  const team = await server.api('POST', '/api/v0/team/', { team_name: 'Lab' }, owner.api_key);
  const email = `inv-member-${stamp}@example.com`;
  const member = await server.api('POST', '/_emu/users', { email, password });
  await server.api('POST', `/api/v0/team/invite/?email=${encodeURIComponent(email)}&role=member`, undefined, owner.api_key);
  const code = await server.lastCode(email);

  await logIn(page, email, password);
  await expect(page).toHaveURL(/\/instances$/);
  await page.goto('/account/teams');
  await expect(page.getByRole('heading', { name: 'Teams', level: 1 })).toBeVisible();
  const form = page.getByRole('form', { name: 'Accept an invitation' });
  // A wrong code: the API's refusal, beside the field; nothing joined.
  await form.getByLabel('Invitation code').fill('not-the-code');
  await form.getByRole('button', { name: 'Accept invitation' }).click();
  await expect(form.getByRole('alert')).toBeVisible();
  await screens('teams-accept');
  await axe();

  await form.getByLabel('Invitation code').fill(code);
  await form.getByRole('button', { name: 'Accept invitation' }).click();
  await expect(page.getByRole('status').filter({ hasText: 'You joined team Lab as member.' })).toBeVisible();
  // The session now knows the team: it is offered in the header's context select and on the page.
  await expect(page.getByRole('banner').getByLabel('Context').getByRole('option', { name: 'Team Lab (member)' })).toBeAttached();
  await expect(page.getByRole('button', { name: 'Act for team Lab' })).toBeVisible();
  await axe();

  // What the API says: the owner sees the member, the invitation is used up, the member's teams list it.
  const { members, invitations } = await createClient({ url: server.url, apiKey: owner.api_key }).team.members();
  expect(members.map((m) => [m.email, m.role])).toContainEqual([email, 'member']);
  expect(invitations).toEqual([]);
  const ctx = await createClient({ url: server.url, apiKey: member.api_key }).auth.sessionTeam();
  expect(ctx.teams.map((t) => [t.team_id, t.role])).toEqual([[team.id, 'member']]);
  // The code is spent: a second try is refused.
  await form.getByLabel('Invitation code').fill(code);
  await form.getByRole('button', { name: 'Accept invitation' }).click();
  await expect(form.getByRole('alert')).toBeVisible();
});
