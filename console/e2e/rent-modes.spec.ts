/**
 * The rent dialog's launch modes (issue 32): each of SSH (proxy), SSH (direct), Jupyter (proxy), Jupyter (direct) and
 * Command is rented from the dialog on a machine of the emulator's simulated fleet, and the instance the API then shows
 * has exactly the spec's values for what was chosen: `image_runtype`, `use_jupyter_lab`, `jupyter_dir`, the
 * arguments (`image_args`), `onstart`, and once it runs the ports its runtype provisions (spec: Runtype values).
 * Bad input is refused beside its field; the mode is chosen by keyboard as well as by mouse.
 */
import type { Page } from '@playwright/test';
import { expect, test, type Server } from './fixtures.js';
import { userLoggedIn, type EmuAccount } from './helpers2.js';

/** A one-GPU machine of the simulated fleet, listed; its one offer's id. */
async function offerOf(server: Server, body: Record<string, unknown> = {}): Promise<number> {
  const { offer_ids } = await server.api('POST', '/_emu/machines', { num_gpus: 1, public_ipaddr: '203.0.113.7', ...body });
  return offer_ids[0];
}

async function openDialog(page: Page, offerId: number) {
  await page.goto('/offers');
  await page.getByRole('button', { name: `Rent offer ${offerId}`, exact: true }).click();
  const dialog = page.getByRole('dialog');
  await expect(dialog).toBeVisible();
  return dialog;
}

/** Rents from the open dialog; the new instance's id (the page goes to the instance list). */
async function rent(page: Page, dialog: ReturnType<Page['getByRole']>): Promise<number> {
  await dialog.getByRole('button', { name: 'Rent' }).click();
  await expect(page).toHaveURL(/\/instances\?created=\d+/);
  return Number(new URL(page.url()).searchParams.get('created'));
}

const show = async (server: Server, user: EmuAccount, id: number) => (await server.api('GET', `/api/v0/instances/${id}/`, undefined, user.key)).instances;

test('each launch mode rents with the spec\'s runtype and exactly the fields chosen', async ({ page, server, screens, axe }) => {
  const user = await userLoggedIn(page, server, { prefix: 'modes' });
  const created: Record<string, number> = {};

  // SSH (proxy), the default, with an on-start script.
  let dialog = await openDialog(page, await offerOf(server));
  await dialog.getByLabel('Image').fill('busybox:latest');
  await expect(dialog.getByRole('radio', { name: /^SSH \(proxy\)/ })).toBeChecked();
  await expect(dialog.getByLabel('Use JupyterLab (instead of Jupyter Notebook)')).toHaveCount(0);
  await expect(dialog.getByLabel('Arguments')).toHaveCount(0);
  await dialog.getByLabel('On-start script').fill('echo proxy');
  created.ssh_proxy = await rent(page, dialog);

  // SSH (direct), chosen with the keyboard (arrow keys move through the radio group). First on an offer without
  // direct ports: refused beside the mode, before anything is sent.
  dialog = await openDialog(page, await offerOf(server, { direct_port_count: 0 }));
  await dialog.getByLabel('Image').fill('busybox:latest');
  await dialog.getByRole('radio', { name: /^SSH \(proxy\)/ }).focus();
  await page.keyboard.press('ArrowDown');
  await expect(dialog.getByRole('radio', { name: /^SSH \(direct\)/ })).toBeChecked();
  await dialog.getByRole('button', { name: 'Rent' }).click();
  await expect(dialog.getByText('this offer has no direct ports, which a direct mode needs')).toBeVisible();
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  dialog = await openDialog(page, await offerOf(server));
  await dialog.getByLabel('Image').fill('busybox:latest');
  await dialog.getByRole('radio', { name: /^SSH \(direct\)/ }).check();
  created.ssh_direct = await rent(page, dialog);

  // Jupyter (proxy) with JupyterLab from a directory, and an on-start script. A relative directory is refused first.
  dialog = await openDialog(page, await offerOf(server));
  await dialog.getByLabel('Image').fill('jupyter/base-notebook:latest');
  await dialog.getByRole('radio', { name: /^Jupyter \(proxy\)/ }).check();
  await dialog.getByLabel('Use JupyterLab (instead of Jupyter Notebook)').check();
  await dialog.getByLabel('Jupyter directory').fill('notebooks');
  await dialog.getByLabel('On-start script').fill('pip list');
  await dialog.getByRole('button', { name: 'Rent' }).click();
  await expect(dialog.getByText('the Jupyter directory must be an absolute path, such as /workspace')).toBeVisible();
  await expect(dialog.getByLabel('Jupyter directory')).toHaveAttribute('aria-invalid', 'true');
  await dialog.getByLabel('Jupyter directory').fill('/workspace/notebooks');
  await screens('rent-dialog-jupyter');
  await axe();
  created.jupyter_proxy = await rent(page, dialog);

  // Jupyter (direct): the Notebook (the box left unticked), from the image's working directory.
  dialog = await openDialog(page, await offerOf(server));
  await dialog.getByLabel('Image').fill('jupyter/base-notebook:latest');
  await dialog.getByRole('radio', { name: /^Jupyter \(direct\)/ }).check();
  await expect(dialog.getByLabel('Use JupyterLab (instead of Jupyter Notebook)')).not.toBeChecked();
  created.jupyter_direct = await rent(page, dialog);

  // Command: an on-start script typed before switching is not sent (the image's entrypoint runs, not the service's);
  // an open quote is refused; the arguments are shown word by word before renting.
  dialog = await openDialog(page, await offerOf(server));
  await dialog.getByLabel('Image').fill('busybox:latest');
  await dialog.getByLabel('On-start script').fill('echo never');
  await dialog.getByRole('radio', { name: /^Command/ }).check();
  await expect(dialog.getByLabel('On-start script')).toHaveCount(0);
  const args = dialog.getByLabel('Arguments');
  await args.fill(`sh -c 'echo "hi there"`);
  await dialog.getByRole('button', { name: 'Rent' }).click();
  await expect(dialog.getByText('the arguments leave a single quote open')).toBeVisible();
  await args.fill(`sh -c 'echo "hi there"; sleep 3600'`);
  await expect(dialog.getByText('The container gets 3 arguments: [sh] [-c] [echo "hi there"; sleep 3600]')).toBeVisible();
  await screens('rent-dialog-command');
  await axe();
  created.args = await rent(page, dialog);

  // What the API shows for each: exactly the spec's values.
  const expected: Record<string, Record<string, unknown>> = {
    ssh_proxy: { image_runtype: 'ssh_proxy', onstart: 'echo proxy', use_jupyter_lab: false, jupyter_dir: null, image_args: [], image_uuid: 'busybox:latest' },
    ssh_direct: { image_runtype: 'ssh_direct', onstart: null, use_jupyter_lab: false, jupyter_dir: null, image_args: [] },
    jupyter_proxy: { image_runtype: 'jupyter_proxy', onstart: 'pip list', use_jupyter_lab: true, jupyter_dir: '/workspace/notebooks', image_args: [] },
    jupyter_direct: { image_runtype: 'jupyter_direct', onstart: null, use_jupyter_lab: false, jupyter_dir: null, image_args: [] },
    args: { image_runtype: 'args', onstart: null, use_jupyter_lab: false, jupyter_dir: null, image_args: [`sh -c 'echo "hi there"; sleep 3600'`], image_uuid: 'busybox:latest' },
  };
  for (const [mode, fields] of Object.entries(expected)) {
    expect(await show(server, user, created[mode]), mode).toMatchObject(fields);
  }
  // Once they run: the ports each runtype provisions (spec: 22 for ssh_direct, 8080 and 22 for jupyter_direct, none
  // for the proxy runtypes and args), and SSH only where the runtype has it.
  await server.advance(60);
  const ports: Record<string, string[]> = { ssh_proxy: [], ssh_direct: ['22/tcp'], jupyter_proxy: [], jupyter_direct: ['22/tcp', '8080/tcp'], args: [] };
  for (const [mode, keys] of Object.entries(ports)) {
    const inst = await show(server, user, created[mode]);
    expect(inst.actual_status, mode).toBe('running');
    expect(Object.keys(inst.ports).sort(), mode).toEqual(keys);
    if (mode === 'args') expect(inst.ssh_host, mode).toBeNull();
    else expect(inst.ssh_port, mode).toEqual(expect.any(Number));
  }
});

test('a template\'s launch mode and its fields fill the dialog, and what is rented is what the dialog showed', async ({ page, server }) => {
  const user = await userLoggedIn(page, server, { prefix: 'tmplmode' });
  const { template } = await server.api('POST', '/api/v0/template/', {
    name: 'lab', image: 'jupyter/base-notebook', tag: 'latest', runtype: 'jupyter', jup_direct: false, use_jupyter_lab: true,
    jupyter_dir: '/home/jovyan', onstart: 'echo tmpl', docker_login_repo: '', docker_login_user: '', docker_login_pass: '',
  }, user.key);
  const dialog = await openDialog(page, await offerOf(server));
  await dialog.getByLabel('Template').selectOption(template.hash_id);
  await expect(dialog.getByRole('radio', { name: /^Jupyter \(proxy\)/ })).toBeChecked();
  await expect(dialog.getByLabel('Use JupyterLab (instead of Jupyter Notebook)')).toBeChecked();
  await expect(dialog.getByLabel('Jupyter directory')).toHaveValue('/home/jovyan');
  await expect(dialog.getByLabel('On-start script')).toHaveValue('echo tmpl');
  // The renter changes the mode: the dialog's choice is sent and wins over the template's.
  await dialog.getByRole('radio', { name: /^SSH \(proxy\)/ }).check();
  const id = await rent(page, dialog);
  expect(await show(server, user, id)).toMatchObject({ image_runtype: 'ssh_proxy', template_hash_id: template.hash_id, onstart: 'echo tmpl' });
});
