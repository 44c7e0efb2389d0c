/**
 * The Offers page's filters (issue 29 items 4 and 5): country codes and region names in the Regions box find the
 * offers of those countries (they found none); a value that cannot match is refused at its field, by the form before
 * sending or by the server after, and the last list is not left standing as if it were the answer.
 */
import { expect, logIn, test } from './fixtures.js';

test('regions find their countries; an unknown GPU model and an out-of-range reliability are refused at their fields', async ({ page, server }) => {
  const email = 'filters@example.com';
  const password = 'correct horse battery';
  await server.api('POST', '/_emu/users', { email, password, credit: 10 });
  await server.api('POST', '/_emu/machines', { geolocation: 'Reykjavik, IS', num_gpus: 1 });
  await logIn(page, email, password);
  await page.goto('/offers');
  await expect(page.getByRole('table')).toBeVisible();
  const regionCells = page.locator('tbody tr td:nth-child(7)');

  // A region name: only offers in its countries (the seeded fleet has North America's in the US and Canada).
  await page.getByLabel('Regions').fill('North_America');
  await page.getByRole('button', { name: 'Search' }).click();
  await expect(page).toHaveURL(/region=North_America/);
  await expect.poll(async () => {
    const places = await regionCells.allInnerTexts();
    return places.length > 0 && places.every((p) => /, (US|CA)$/.test(p));
  }).toBe(true);
  // A country code, in any case: the machine added in Iceland, and only it.
  await page.getByLabel('Regions').fill('is');
  await page.getByRole('button', { name: 'Search' }).click();
  await expect(page).toHaveURL(/region=is/);
  await expect.poll(() => regionCells.allInnerTexts()).toEqual(['Reykjavik, IS']);
  // Neither a code nor a region: refused at the field, nothing searched.
  await page.getByLabel('Regions').fill('Mars');
  await expect(page.getByText('"Mars" is neither a two-letter country code nor a region')).toBeVisible();
  await expect(page.getByRole('button', { name: 'Search' })).toBeDisabled();
  await page.getByLabel('Regions').fill('');

  // Out of range: the form refuses it before sending, in the CLI's words.
  await page.getByLabel('Reliability at least (0–1)').fill('99');
  await expect(page.getByText('reliability gte 99: cannot match: reliability is a fraction from 0 to 1')).toBeVisible();
  await expect(page.getByRole('button', { name: 'Search' })).toBeDisabled();
  await page.getByLabel('Reliability at least (0–1)').fill('');

  // A GPU model only the server knows is unknown: its refusal shows under the GPU field, and no table stays.
  await page.getByLabel('GPU model').fill('RTX4090');
  await page.getByRole('button', { name: 'Search' }).click();
  await expect(page).toHaveURL(/gpu=RTX4090/);
  await expect(page.getByText('gpu_name.eq: "RTX4090" cannot match: did you mean "RTX 4090"?')).toBeVisible();
  await expect(page.getByLabel('GPU model')).toHaveAttribute('aria-invalid', 'true');
  await expect(page.getByRole('table')).toHaveCount(0);
  // Corrected, the search runs and the message is gone.
  await page.getByLabel('GPU model').fill('RTX 4090');
  await expect(page.getByText('cannot match')).toHaveCount(0);
  await page.getByRole('button', { name: 'Search' }).click();
  await expect(page.getByRole('table')).toBeVisible();
});
