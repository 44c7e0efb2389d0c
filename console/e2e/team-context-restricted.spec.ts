/**
 * A team context whose role lacks `user_read` (contract §3 Team context): GET /users/current/ is then 403, yet the
 * session is valid. The console must keep the member signed in (it confirms the session with GET
 * /api/v0/auth/sessions/team/, which any session may read), not show the sign-in page, and let them switch back.
 */
import { expect, logIn, test } from './fixtures.js';

test('a member whose team role cannot read the user stays signed in in that context, and switches back', async ({ page, server, screens, axe }) => {
  const password = 'correct horse battery staple';
  const stamp = Date.now();
  const owner = await server.api('POST', '/_emu/users', { email: `rctx-owner-${stamp}@example.com`, password });
  const team = await server.api('POST', '/api/v0/team/', { team_name: 'Lab' }, owner.api_key);
  await server.api('POST', '/api/v0/team/roles/', { name: 'watcher', permissions: { api: { instance_read: {} } } }, owner.api_key);
  const email = `rctx-member-${stamp}@example.com`;
  const member = await server.api('POST', '/_emu/users', { email, password });
  await server.api('POST', `/api/v0/team/invite/?email=${encodeURIComponent(email)}&role=watcher`, undefined, owner.api_key);
  await server.api('POST', '/api/v0/team/invitations/accept/', { code: await server.lastCode(email) }, member.api_key);

  await logIn(page, email, password);
  await expect(page).toHaveURL(/\/instances$/);
  const banner = page.getByRole('banner');
  await expect(banner.getByText(email)).toBeVisible();
  const context = banner.getByLabel('Context');
  await context.selectOption({ label: 'Team Lab (watcher)' });
  await expect(context).toHaveValue(String(team.id));

  // What the API says to this browser's session: it acts for the team, and may not read the user.
  const current = await page.request.get('/api/v0/users/current/');
  expect(current.status()).toBe(403);
  const ctx = await (await page.request.get('/api/v0/auth/sessions/team/')).json();
  expect(ctx.team_id).toBe(team.id);

  // Still signed in: the navigation, not the sign-in page; the e-mail is not known, so not shown.
  await expect(page.getByRole('navigation', { name: 'Main' })).toBeVisible();
  await expect(page.getByRole('button', { name: 'Log in' })).toHaveCount(0);
  await expect(page.getByText('You have no live instances', { exact: false })).toBeVisible();
  // Also after a full page load (the shell decides afresh who is signed in).
  await page.reload();
  await expect(page.getByRole('navigation', { name: 'Main' })).toBeVisible();
  await expect(page).toHaveURL(/\/instances$/);
  await expect(context).toHaveValue(String(team.id));
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Account', exact: true }).click();
  await expect(page.getByText('Your role in this team does not let you read the account')).toBeVisible();
  await screens('team-context-restricted');
  await axe();

  // Back to the personal context from the header: the account is readable again.
  await context.selectOption({ label: 'Personal' });
  await expect(context).toHaveValue('');
  await expect(banner.getByText(email)).toBeVisible();
  await expect(page.getByText(`${email} (verified)`)).toBeVisible();
  expect((await page.request.get('/api/v0/users/current/')).status()).toBe(200);
});
