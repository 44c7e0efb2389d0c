/** Sign-up with e-mail verification, sign-in, the main navigation, sign-out (issue 15: Sign-in). */
import { expect, logIn, signUpAndVerify, test } from './fixtures.js';

test('sign up, verify the e-mail with the code sent, log in, see the navigation, sign out', async ({ page, server, screens, axe }) => {
  await page.goto('/');
  await expect(page).toHaveURL(/\/login$/);
  await expect(page.getByRole('button', { name: 'Log in' })).toBeVisible();
  await screens('login');
  await axe();

  await page.getByRole('link', { name: 'Sign up' }).click();
  await expect(page.getByRole('heading', { name: 'Sign up' })).toBeVisible();
  await screens('signup');
  await axe();

  await signUpAndVerify(page, server, 'ada@example.com', 'correct horse battery');
  await logIn(page, 'ada@example.com', 'correct horse battery');
  const nav = page.getByRole('navigation', { name: 'Main' });
  for (const name of ['Offers', 'Instances', 'Templates', 'Billing', 'Keys', 'Account']) {
    await expect(nav.getByRole('link', { name, exact: true })).toBeVisible();
  }
  // Not a host: no Machines link. Not an admin: no Emulator link (its API answers admins only; issue 29 item 9).
  await expect(nav.getByRole('link', { name: 'Machines' })).toHaveCount(0);
  await expect(nav.getByRole('link', { name: 'Emulator' })).toHaveCount(0);

  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page.getByRole('button', { name: 'Log in' })).toBeVisible();
  // The session is gone on the server too: a reload stays signed out.
  await page.reload();
  await expect(page.getByRole('button', { name: 'Log in' })).toBeVisible();
});

test('a wrong password is shown next to the form in the API\'s words', async ({ page }) => {
  await page.goto('/login');
  await page.getByLabel('Email').fill('nobody@example.com');
  await page.getByLabel('Password').fill('not the password');
  await page.getByRole('button', { name: 'Log in' }).click();
  await expect(page.getByRole('alert')).toHaveText(/wrong username or password/);
});
