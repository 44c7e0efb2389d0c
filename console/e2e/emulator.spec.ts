/** Emulator panel (issue 15; contract §2): the clock and its advance, the outbox with codes, a fault, reset. */
import { expect, test } from './fixtures.js';
import { serverNow, userLoggedIn } from './helpers2.js';

test('an admin advances the clock, reads the outbox, injects a fault, and a wrong input is shown beside its field', async ({ page, server, screens, axe }) => {
  const admin = await userLoggedIn(page, server, { admin: true, prefix: 'admin' });
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Emulator' }).click();
  await expect(page.getByRole('heading', { name: 'Emulator', level: 1 })).toBeVisible();

  const before = await serverNow(server);
  await page.getByLabel('Advance by').fill('2h');
  await page.getByRole('button', { name: 'Advance clock' }).click();
  await expect.poll(() => serverNow(server)).toBeGreaterThanOrEqual(before + 7200);
  await expect(page.getByTestId('clock-now')).toHaveText(new Date((await serverNow(server)) * 1000).toISOString().slice(0, 16).replace('T', ' ') + ' UTC');

  await page.getByLabel('Advance by').fill('soon');
  await page.getByRole('button', { name: 'Advance clock' }).click();
  await expect(page.getByText('Enter a duration such as')).toBeVisible();

  // A code the emulator "sent" shows in the outbox.
  await server.api('POST', '/api/v0/tfa/email/', {}, admin.key);
  await page.getByLabel('Recipient').fill(admin.email);
  await page.getByRole('button', { name: 'Refresh outbox' }).click();
  const code = await server.lastCode(admin.email);
  await expect(page.getByRole('table', { name: 'Outbox' }).getByRole('cell', { name: code, exact: true })).toBeVisible();

  // A fault on a machine that does not exist: the API's words, beside the form.
  await page.getByLabel('Fault', { exact: true }).selectOption({ label: 'offline (machine): the machine goes offline' });
  await page.getByLabel('Machine ID').fill('999999');
  await page.getByRole('button', { name: 'Inject fault' }).click();
  await expect(page.getByRole('form', { name: 'Inject a fault' }).getByRole('alert')).toBeVisible();
  await page.getByLabel('Fault', { exact: true }).selectOption({ label: 'sms_error (messages): the next SMS sends fail (twilio_error)' });
  await page.getByLabel('How many times').fill('1');
  await page.getByRole('button', { name: 'Inject fault' }).click();
  await expect(page.getByText('Fault sms_error applied.')).toBeVisible();
  // The fault takes effect: the next SMS send fails as twilio_error. (This also uses it up: the server is shared with
  // the other spec files of this worker, whose SMS sends must not fail.)
  const start = await server.api('POST', '/api/v0/tfa/authorize-new-method/', { tfa_method: 'email' }, admin.key);
  await server.api('PUT', '/api/v0/tfa/authorize-new-method/', { code: await server.lastCode(admin.email), secret: start.secret }, admin.key);
  await expect(server.api('POST', '/api/v0/tfa/sms/', { phone_number: '+442071239999' }, admin.key)).rejects.toThrow(/twilio_error/);
  await screens('emulator');
  await axe();
});

test('a user who is not an admin has no Emulator link, gets a plain "admins only" page, and no refused requests (issue 29 item 9)', async ({ page, server, screens, axe }) => {
  // Every request to the control API from this page, with its status: none should be made at all.
  const emu: string[] = [];
  page.on('response', (r) => {
    if (new URL(r.url()).pathname.startsWith('/_emu/')) emu.push(`${r.status()} ${r.url()}`);
  });
  await userLoggedIn(page, server, { prefix: 'plain' });
  await expect(page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Instances' })).toBeVisible();
  await expect(page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Emulator' })).toHaveCount(0);
  await page.goto('/emulator');
  await expect(page.getByRole('heading', { name: 'Emulator', level: 1 })).toBeVisible();
  await expect(page.getByRole('status')).toHaveText(/^Admins only/);
  await expect(page.getByRole('alert')).toHaveCount(0);
  await expect(page.getByRole('button', { name: 'Advance clock' })).toHaveCount(0);
  await page.reload();
  await expect(page.getByRole('status')).toHaveText(/^Admins only/);
  expect(emu).toEqual([]);
  await screens('emulator-not-admin');
  await axe();
});
