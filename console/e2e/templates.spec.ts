/**
 * Templates (issue 15) and its sub-pages: a template, an SSH key, an environment variable, and a serverless endpoint
 * with a workergroup whose autoscaler decisions show after the clock advances.
 */
import { generateKeyPairSync } from 'node:crypto';
import { expect, test } from './fixtures.js';
import { userLoggedIn } from './helpers2.js';

/** A real OpenSSH ed25519 public key line. */
function sshPublicKey(): string {
  const raw = generateKeyPairSync('ed25519').publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  const str = (b: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, b.length]), b]);
  return `ssh-ed25519 ${Buffer.concat([str(Buffer.from('ssh-ed25519')), str(raw)]).toString('base64')} e2e@example.com`;
}

test('templates, SSH keys, variables, volumes and serverless, each a sub-page reached by keyboard', async ({ page, server, screens, axe }) => {
  await userLoggedIn(page, server, { prefix: 'tpl', credit: 500 });
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Templates', exact: true }).click();
  await expect(page.getByRole('heading', { name: 'Templates', level: 1 })).toBeVisible();

  await page.getByLabel('Template name').fill('my pytorch');
  await page.getByLabel('Image', { exact: true }).fill('pytorch/pytorch');
  await page.getByLabel('On-start script').fill('echo hello');
  await page.getByRole('button', { name: 'Create template' }).click();
  await expect(page.getByRole('table', { name: 'Templates' }).getByRole('cell', { name: 'my pytorch', exact: true })).toBeVisible();
  await screens('templates');
  await axe();

  // The sub-pages are links: reach SSH keys with the keyboard.
  const tabs = page.getByRole('navigation', { name: 'Templates and resources' });
  await tabs.getByRole('link', { name: 'SSH keys' }).focus();
  await page.keyboard.press('Enter');
  await expect(page).toHaveURL(/\/templates\/ssh-keys$/);
  await page.getByLabel('Public key').fill('not a key');
  await page.getByRole('button', { name: 'Add SSH key' }).click();
  await expect(page.getByRole('alert')).toBeVisible();
  await page.getByLabel('Public key').fill(sshPublicKey());
  await page.getByRole('button', { name: 'Add SSH key' }).click();
  await expect(page.getByRole('button', { name: /^Delete SSH key \d+$/ })).toBeVisible();
  await screens('ssh-keys');
  await axe();

  await tabs.getByRole('link', { name: 'Environment variables' }).click();
  await page.getByLabel('Variable name').fill('HF_TOKEN');
  await page.getByLabel('Value').fill('s3cret-value');
  await page.getByRole('button', { name: 'Add variable' }).click();
  const vars = page.getByRole('table', { name: 'Environment variables' });
  await expect(vars.getByRole('cell', { name: 'HF_TOKEN', exact: true })).toBeVisible();
  await expect(page.getByText('s3cret-value')).toHaveCount(0);
  await vars.getByRole('button', { name: 'Show the value of HF_TOKEN' }).click();
  await expect(vars.getByText('s3cret-value')).toBeVisible();
  await screens('env-vars');
  await axe();

  await tabs.getByRole('link', { name: 'Volumes' }).click();
  await expect(page.getByText('No volumes yet.')).toBeVisible();
  await screens('volumes');
  await axe();

  await tabs.getByRole('link', { name: 'Serverless' }).click();
  await page.getByLabel('Endpoint name').fill('e2e-endpoint');
  await page.getByLabel('Maximum workers').fill('0');
  await page.getByRole('button', { name: 'Create endpoint' }).click();
  await expect(page.getByRole('alert').first()).toBeVisible();
  await expect(page.getByRole('alert').first()).toHaveText(/max_workers/);
  await page.getByLabel('Cold workers').fill('1');
  await page.getByLabel('Maximum workers').fill('3');
  await page.getByRole('button', { name: 'Create endpoint' }).click();
  const endpoints = page.getByRole('table', { name: 'Endpoints' });
  await expect(endpoints.getByRole('cell', { name: 'e2e-endpoint', exact: true })).toBeVisible();
  const endpointId = Number(await endpoints.getByRole('row').nth(1).getByRole('cell').first().textContent());

  await page.getByLabel('Endpoint', { exact: true }).selectOption({ label: `e2e-endpoint (#${endpointId})` });
  await page.getByLabel('Template', { exact: true }).selectOption({ label: 'my pytorch (pytorch/pytorch)' });
  await page.getByRole('button', { name: 'Create workergroup' }).click();
  const group = page.getByRole('article', { name: /^Workergroup \d+ of e2e-endpoint$/ });
  await expect(group).toBeVisible();

  // Load on the endpoint, time passes: the autoscaler decides, with its reason.
  await server.api('POST', `/_emu/endpoints/${endpointId}/load`, { load: 500 });
  await server.advance(120);
  await group.getByRole('button', { name: 'Show autoscaler decisions' }).click();
  const decisions = group.getByRole('table', { name: /^Autoscaler decisions of workergroup/ });
  await expect(decisions).toBeVisible();
  await expect(decisions.getByRole('row').nth(1)).toBeVisible();
  await screens('serverless');
  await axe();
});
