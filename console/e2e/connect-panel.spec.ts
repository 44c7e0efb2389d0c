/**
 * The instance page's Connect panel (issue 32) for instances of the emulator's simulated fleet: for a running SSH
 * instance the SSH, scp and rsync lines at the address `vastai ssh-url` gives, `vastai copy` both ways, each port URL
 * with Open (through the grant route, in a new tab) and Copy, the terminal link; for a running Jupyter instance its
 * link with the token as well, and SSH on the port after `ssh_port`; for runtype `args` no SSH at all; while an
 * instance does not run, a note instead. Every copy button copies exactly the text shown.
 */
import type { Locator, Page } from '@playwright/test';
import { expect, test, type Server } from './fixtures.js';
import { userLoggedIn, type EmuAccount } from './helpers2.js';

async function rentByApi(server: Server, user: EmuAccount, body: Record<string, unknown>): Promise<number> {
  const { offer_ids } = await server.api('POST', '/_emu/machines', { num_gpus: 1, public_ipaddr: '203.0.113.9' });
  const { new_contract } = await server.api('PUT', `/api/v0/asks/${offer_ids[0]}/`, { image: 'busybox:latest', ...body }, user.key);
  return new_contract;
}

const show = async (server: Server, user: EmuAccount, id: number) => (await server.api('GET', `/api/v0/instances/${id}/`, undefined, user.key)).instances;

async function panelOf(page: Page, id: number): Promise<Locator> {
  await page.goto(`/instances/${id}`);
  const panel = page.getByRole('region', { name: 'Connect' });
  await expect(panel).toBeVisible();
  return panel;
}

/** The line is shown as it is, and its copy button puts exactly that text on the clipboard. */
async function copies(page: Page, panel: Locator, button: string, text: string): Promise<void> {
  await expect(panel.getByText(text, { exact: true })).toBeVisible();
  await panel.getByRole('button', { name: button, exact: true }).click();
  await expect(panel.getByText('Copied').first()).toBeVisible();
  expect(await page.evaluate(() => navigator.clipboard.readText()), button).toBe(text);
}

test('a running SSH instance: ssh, scp, rsync and vastai copy lines, its port URL opened through a grant, the terminal', async ({ page, context, server, screens, axe }) => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  const user = await userLoggedIn(page, server, { prefix: 'connssh' });
  const id = await rentByApi(server, user, { runtype: 'ssh_proxy', env: { '-p 8000:8000': '1' } });
  let panel = await panelOf(page, id);
  // Not running yet: nothing to copy, and the panel says when there will be.
  await expect(panel.getByText('Connection details are available while the instance runs.')).toBeVisible();
  await expect(panel.getByText('The terminal is available while the instance runs.')).toBeVisible();
  await expect(panel.getByRole('button', { name: /^Copy/ })).toHaveCount(0);

  await server.advance(60);
  const inst = await show(server, user, id);
  expect(inst.actual_status).toBe('running');
  expect(inst.ssh_port).toEqual(expect.any(Number));
  const host = inst.ssh_host as string;
  const port = inst.ssh_port as number;
  await expect(panel.getByText('Connection details are available while the instance runs.')).toHaveCount(0);
  await copies(page, panel, 'Copy SSH command', `ssh -p ${port} root@${host}`);
  await copies(page, panel, 'Copy scp command', `scp -P ${port} ./file root@${host}:/workspace/`);
  await copies(page, panel, 'Copy rsync command', `rsync -avz -e 'ssh -p ${port}' ./data/ root@${host}:/workspace/data/`);
  await copies(page, panel, 'Copy vastai copy (upload)', `vastai copy ./data ${id}:/workspace/data`);
  await copies(page, panel, 'Copy vastai copy (download)', `vastai copy ${id}:/workspace/data ./data`);
  // No Jupyter for an SSH runtype.
  await expect(panel.getByRole('heading', { name: 'Jupyter' })).toHaveCount(0);

  // The web port: its URL through the server, copied; Open asks the server for a grant and opens a new tab there.
  const url = inst.port_urls['8000/tcp'] as string;
  expect(url).toMatch(new RegExp(`^https?://${id}-8000\\.`));
  await copies(page, panel, 'Copy URL of port 8000', url);
  // (The tab is watched by its first request, not by its load: with `--port 0` the test server's port URLs name port
  // 0, which the browser will not open.)
  const grant = page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === `/api/v0/instances/${id}/ports/8000/grant/`);
  const opened = context.waitForEvent('request', (r) => new URL(r.url()).hostname === new URL(url).hostname);
  await panel.getByRole('button', { name: 'Open port 8000' }).click();
  const granted = await grant;
  expect(granted.request().headers()['x-gpuplane-csrf']).toBe('1');
  expect(granted.status()).toBe(200);
  const answer = await granted.json();
  expect(answer).toMatchObject({ success: true, url: expect.stringMatching(new RegExp(`^${new URL(url).origin.replace(/[.]/g, '\\.')}/`)) });
  expect((await opened).url()).toBe(answer.url);
  expect((await opened).frame().page()).not.toBe(page);
  // The host's direct mapping of that port too.
  const direct = `${inst.public_ipaddr}:${inst.ports['8000/tcp'][0].HostPort}`;
  await copies(page, panel, 'Copy address of port 8000/tcp', direct);

  // The terminal page of this instance.
  await expect(panel.getByRole('link', { name: 'Open a terminal' })).toHaveAttribute('href', `/instances/terminal?id=${id}`);
  await screens('connect-ssh');
  await axe();

  // Stopped: the lines go, the note comes back.
  await server.api('PUT', `/api/v0/instances/${id}/`, { state: 'stopped' }, user.key);
  await server.advance(5);
  panel = await panelOf(page, id);
  await expect(panel.getByText('Connection details are available while the instance runs.')).toBeVisible();
  await expect(panel.getByText(`ssh -p ${port} root@${host}`, { exact: true })).toHaveCount(0);
  await expect(panel.getByRole('link', { name: 'Open a terminal' })).toHaveCount(0);
});

test('a running Jupyter instance: the Jupyter link with its token (Open and Copy), SSH on ssh-url\'s port, Jupyter\'s port URL', async ({ page, context, server, screens, axe }) => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  const user = await userLoggedIn(page, server, { prefix: 'connjup' });
  const id = await rentByApi(server, user, { runtype: 'jupyter_proxy', use_jupyter_lab: true });
  await server.advance(60);
  const inst = await show(server, user, id);
  expect(inst.actual_status).toBe('running');
  // The contract between the helpers of issue 32: the proxy form is the port URL of 8080 with the token.
  expect(inst.jupyter_token).toEqual(expect.any(String));
  expect(inst.jupyter_url).toBe(`${inst.port_urls['8080/tcp']}?token=${inst.jupyter_token}`);
  const panel = await panelOf(page, id);
  const open = panel.getByRole('link', { name: 'Open Jupyter' });
  await expect(open).toHaveAttribute('href', inst.jupyter_url);
  await expect(open).toHaveAttribute('target', '_blank');
  await expect(open).toHaveAttribute('rel', 'noopener noreferrer');
  await copies(page, panel, 'Copy Jupyter link', inst.jupyter_url);
  // SSH as `vastai ssh-url` reaches it: the gateway's next port for Jupyter runtypes (client-compat-connect.md).
  await copies(page, panel, 'Copy SSH command', `ssh -p ${inst.ssh_port + 1} root@${inst.ssh_host}`);
  await copies(page, panel, 'Copy URL of port 8080', inst.port_urls['8080/tcp']);
  await expect(panel.getByText('8080/tcp (Jupyter):')).toBeVisible();
  await expect(panel.getByRole('link', { name: 'Open a terminal' })).toHaveAttribute('href', `/instances/terminal?id=${id}`);
  await screens('connect-jupyter');
  await axe();
});

test('runtype args: no SSH, copy or Jupyter lines; the terminal stays', async ({ page, server }) => {
  const user = await userLoggedIn(page, server, { prefix: 'connargs' });
  const id = await rentByApi(server, user, { runtype: 'args', args_str: 'sleep 3600' });
  await server.advance(60);
  expect((await show(server, user, id)).actual_status).toBe('running');
  const panel = await panelOf(page, id);
  await expect(panel.getByRole('link', { name: 'Open a terminal' })).toHaveAttribute('href', `/instances/terminal?id=${id}`);
  for (const name of ['SSH', 'vastai copy', 'Jupyter']) await expect(panel.getByRole('heading', { name, exact: true })).toHaveCount(0);
  await expect(panel.getByRole('button', { name: /^Copy (SSH|scp|rsync|vastai)/ })).toHaveCount(0);
  await expect(panel.getByText('Connection details are available while the instance runs.')).toHaveCount(0);
});
