/**
 * Emulator panel, issue 34: scripted failures (request faults, host events) and transitions, driven from the page and
 * checked through the API. Each test leaves the server as it found it (no rule, event or transition left): the server
 * may be shared with the worker's other spec files.
 */
import { expect, test } from './fixtures.js';
import { userLoggedIn } from './helpers2.js';
import type { Page } from '@playwright/test';

async function openEmulator(page: Page): Promise<void> {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Emulator' }).click();
  await expect(page.getByRole('heading', { name: 'Emulator', level: 1 })).toBeVisible();
}

test('request faults: a 429 with Retry-After on POST /api/v0/bundles/ is listed, answers as Vast.ai would, counts, and is cleared', async ({ page, server, screens, axe }) => {
  const admin = await userLoggedIn(page, server, { admin: true, prefix: 'rf-admin' });
  await openEmulator(page);
  const form = page.getByRole('form', { name: 'Add a request fault' });

  // Nothing narrows it: the form says which field, and nothing is sent.
  await form.getByRole('button', { name: 'Add request fault' }).click();
  await expect(form.getByText('Say which requests')).toBeVisible();
  expect((await server.api('GET', '/_emu/request-faults')).faults).toEqual([]);

  await form.getByLabel('Route').fill('/api/v0/bundles/');
  await form.getByLabel('Method').selectOption('POST');
  await form.getByLabel('Status').selectOption('429');
  await form.getByLabel('Retry-After (seconds)').fill('2');
  await form.getByRole('button', { name: 'Add request fault' }).click();
  await expect(page.getByRole('status').filter({ hasText: /Request fault \d+ added/ })).toBeVisible();
  const table = page.getByRole('table', { name: 'Request faults' });
  const row = table.getByRole('row').filter({ hasText: 'POST /api/v0/bundles/' });
  await expect(row).toContainText('429, Retry-After 2 s');
  await expect(row).toContainText('always');
  const [rule] = (await server.api('GET', '/_emu/request-faults')).faults;
  expect(rule).toMatchObject({ method: 'POST', route: '/api/v0/bundles/', status: 429, retry_after: 2, fired: 0 });

  // The faulted request: 429, Retry-After: 2, the normal error object. Other routes are not faulted.
  const search = () => fetch(`${server.url}/api/v0/bundles/`, {
    method: 'POST', headers: { authorization: `Bearer ${admin.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ limit: 1 }),
  });
  const faulted = await search();
  expect(faulted.status).toBe(429);
  expect(faulted.headers.get('retry-after')).toBe('2');
  const body = await faulted.json();
  expect(body).toMatchObject({ success: false });
  expect(typeof body.error).toBe('string');
  expect(typeof body.msg).toBe('string');
  expect((await fetch(`${server.url}/api/v0/users/current/`, { headers: { authorization: `Bearer ${admin.key}` } })).status).toBe(200);

  await page.getByRole('button', { name: 'Refresh request faults' }).click();
  await expect(row.getByRole('cell').nth(4)).toHaveText('1');
  await expect(row.getByRole('cell').nth(5)).toHaveText('1');
  await screens('emulator-request-faults');
  await axe();

  await page.getByRole('button', { name: `Clear request fault ${rule.id}` }).click();
  await expect(page.getByText(`Request fault ${rule.id} cleared.`)).toBeVisible();
  await expect(page.getByText('No request faults.')).toBeVisible();
  expect((await search()).status).toBe(200);

  // Two more (a 503 by category, half the time, seeded; a timeout), then clear all.
  await form.getByLabel('Route').fill('');
  await form.getByLabel('Method').selectOption('*');
  await form.getByLabel('Permission category').selectOption('instance_write');
  await form.getByLabel('Status').selectOption('503');
  await form.getByLabel('Probability').fill('0.5');
  await form.getByLabel('Fault seed').fill('7');
  await form.getByRole('button', { name: 'Add request fault' }).click();
  await expect(table.getByRole('row').filter({ hasText: 'category instance_write' })).toContainText('50% of requests, seed 7');
  await form.getByLabel('Permission category').selectOption('');
  await form.getByLabel('Route').fill('/api/v0/instances/*');
  await form.getByLabel('Reply').selectOption({ label: 'No reply (dropped)' });
  await form.getByLabel('Drop after (ms)').fill('100');
  await form.getByLabel('Probability').fill('1');
  await form.getByLabel('Fault seed').fill('');
  await form.getByRole('button', { name: 'Add request fault' }).click();
  await expect(table.getByRole('row').filter({ hasText: '/api/v0/instances/*' })).toContainText('no reply (dropped after 100 ms)');
  expect((await server.api('GET', '/_emu/request-faults')).faults).toHaveLength(2);
  await page.getByRole('button', { name: 'Clear all request faults' }).click();
  await expect(page.getByText('No request faults.')).toBeVisible();
  expect((await server.api('GET', '/_emu/request-faults')).faults).toEqual([]);
});

test('host events: an outbid wave in 60 s on a chosen machine outbids its bid instance when the clock passes it, one is cancelled, a slow pull shows its window', async ({ page, server, screens, axe }) => {
  await userLoggedIn(page, server, { admin: true, prefix: 'ev-admin' });
  // A machine of its own with an interruptible (bid) instance on it, for the wave to outbid.
  const machine = await server.api('POST', '/_emu/machines', { num_gpus: 1, min_bid: 0.2 });
  const machineId: number = machine.machine_id;
  const renter = await server.api('POST', '/_emu/users', { email: `ev-renter-${Date.now()}@example.com`, password: 'correct horse battery staple', credit: 100 });
  const { new_contract: bidId } = await server.api('PUT', `/api/v0/asks/${machine.offer_ids[0]}/`, { client_id: 'me', image: 'busybox:latest', disk: 8, price: 0.3 }, renter.api_key);
  await openEmulator(page);
  const form = page.getByRole('form', { name: 'Add a host event' });

  // A wrong duration is named beside its field.
  await form.getByLabel('Starts in').fill('soon');
  await form.getByRole('button', { name: 'Add event' }).click();
  await expect(form.getByText('Enter a duration such as')).toBeVisible();

  await form.getByLabel('Event', { exact: true }).selectOption('outbid_wave');
  await form.getByLabel('Starts in').fill('60');
  await form.getByLabel('Machines', { exact: true }).selectOption('ids');
  await form.getByLabel('Machine IDs').fill(String(machineId));
  await form.getByRole('button', { name: 'Add event' }).click();
  await expect(page.getByRole('status').filter({ hasText: /Event \d+ \(Outbid wave\) scheduled on machines/ })).toBeVisible();
  const [wave] = (await server.api('GET', '/_emu/events')).events;
  expect(wave).toMatchObject({ kind: 'outbid_wave', machine_ids: [machineId], state: 'pending' });
  const table = page.getByRole('table', { name: 'Host events' });
  const waveRow = table.getByRole('row').filter({ has: page.getByRole('cell', { name: String(wave.id), exact: true }) });
  await expect(waveRow).toContainText('Outbid wave');
  await expect(waveRow).toContainText('(in 1 min)');
  await expect(waveRow).toContainText('pending');

  // A host offline for 5 minutes in an hour, on one machine chosen by the seed.
  await form.getByLabel('Event', { exact: true }).selectOption('host_offline');
  await form.getByLabel('Starts in').fill('1h');
  await form.getByLabel('Machines', { exact: true }).selectOption('machines');
  await form.getByLabel('Number of machines').fill('1');
  await form.getByLabel('Lasts').fill('5m');
  await form.getByLabel('Event seed').fill('3');
  await form.getByRole('button', { name: 'Add event' }).click();
  await expect.poll(async () => (await server.api('GET', '/_emu/events')).events.length).toBe(2);
  const offline = (await server.api('GET', '/_emu/events')).events.find((e: { kind: string }) => e.kind === 'host_offline');
  expect(offline).toMatchObject({ kind: 'host_offline', duration: 300, state: 'pending' });
  expect(offline.machine_ids).toHaveLength(1);
  const offlineRow = table.getByRole('row').filter({ hasText: 'Host offline' });
  await expect(offlineRow).toContainText('for 5 min');
  await screens('emulator-host-events');
  await axe();

  // The clock passes the wave (the page's own advance): it is done, and says which instance it outbid.
  await page.getByLabel('Advance by').fill('2m');
  await page.getByRole('button', { name: 'Advance clock' }).click();
  await expect(waveRow).toContainText('done');
  await expect(waveRow).toContainText(`outbid instance ${bidId}`);
  expect((await server.api('GET', `/api/v0/instances/${bidId}/`, undefined, renter.api_key)).instances.actual_status).toBe('stopped');

  // The offline one is cancelled before its time: it never happens.
  await page.getByRole('button', { name: `Cancel event ${offline.id}` }).click();
  await expect(page.getByText(`Event ${offline.id} cancelled.`)).toBeVisible();
  await expect(page.getByRole('button', { name: `Cancel event ${offline.id}` })).toHaveCount(0);
  const after = (await server.api('GET', '/_emu/events')).events.find((e: { id: number }) => e.id === offline.id);
  expect(after === undefined || after.state !== 'pending').toBe(true);

  // A slow pull from now on the machine: once the clock reaches it, the Transitions section lists its window; ending
  // every event closes it.
  await form.getByLabel('Event', { exact: true }).selectOption('slow_pull');
  await form.getByLabel('Starts in').fill('0');
  await form.getByLabel('Machines', { exact: true }).selectOption('ids');
  await form.getByLabel('Machine IDs').fill(String(machineId));
  await form.getByLabel('Lasts').fill('10m');
  await form.getByLabel('A pull takes (seconds)').fill('600');
  await form.getByRole('button', { name: 'Add event' }).click();
  await expect(page.getByRole('status').filter({ hasText: /\(Slow pull\) scheduled/ })).toBeVisible();
  await page.getByLabel('Advance by').fill('1');
  await page.getByRole('button', { name: 'Advance clock' }).click();
  const slowRow = table.getByRole('row').filter({ hasText: 'Slow pull' });
  await expect(slowRow).toContainText('active');
  await expect(slowRow).toContainText('pulls take 600 s, for 10 min');
  const windows = page.getByRole('list', { name: 'Slow pulls now' });
  await expect(windows).toContainText(`Machine ${machineId}: pulls take 600 s`);
  await page.getByRole('button', { name: 'Cancel all events' }).click();
  await expect(page.getByText('Every event was cancelled or ended.')).toBeVisible();
  await expect(windows).toHaveCount(0);
  expect((await server.api('GET', '/_emu/transitions')).slow_pulls).toEqual([]);
  await server.api('DELETE', '/_emu/events');
  await server.api('DELETE', `/api/v0/instances/${bidId}/`, undefined, renter.api_key);
});

test('transitions: manual for every instance, an instance advanced step by step to running, a per-instance delay, then removed', async ({ page, server, screens, axe }) => {
  await userLoggedIn(page, server, { admin: true, prefix: 'tr-admin' });
  const renter = await server.api('POST', '/_emu/users', { email: `tr-renter-${Date.now()}@example.com`, password: 'correct horse battery staple', credit: 100 });
  await openEmulator(page);
  const form = page.getByRole('form', { name: 'Set transitions' });

  await form.getByLabel('For').selectOption('kind');
  await form.getByLabel('Mode').selectOption('manual');
  await form.getByRole('button', { name: 'Set transitions' }).click();
  await expect(page.getByText('Transitions of every instance: manual (advance it).')).toBeVisible();
  const table = page.getByRole('table', { name: 'Transitions' });
  await expect(table.getByRole('row').filter({ hasText: 'every instance' })).toContainText('manual (advance it)');
  expect((await server.api('GET', '/_emu/transitions')).transitions).toEqual([expect.objectContaining({ mode: 'manual' })]);

  // A new instance stays short of running until it is advanced; each advance is one step.
  const { offers } = await server.api('POST', '/api/v0/bundles/', { rentable: { eq: true }, rented: { eq: false }, type: 'on-demand', limit: 1 }, renter.api_key);
  const { new_contract: id } = await server.api('PUT', `/api/v0/asks/${offers[0].id}/`, { client_id: 'me', image: 'busybox:latest', disk: 8 }, renter.api_key);
  const status = async () => (await server.api('GET', `/api/v0/instances/${id}/`, undefined, renter.api_key)).instances.actual_status;
  await server.advance(600);
  expect(await status()).not.toBe('running');

  const advanceForm = page.getByRole('form', { name: 'Advance an instance' });
  await advanceForm.getByLabel('Instance to advance').fill(String(id));
  for (let step = 0; step < 3; step++) {
    const before = await status();
    if (before === 'running') break;
    await advanceForm.getByRole('button', { name: 'Advance instance' }).click();
    await expect.poll(status).not.toBe(before);
  }
  expect(await status()).toBe('running');
  await expect(page.getByText(`Instance ${id} is now running.`)).toBeVisible();
  // Nothing left to advance: the API's refusal, beside the field.
  await advanceForm.getByRole('button', { name: 'Advance instance' }).click();
  await expect(advanceForm.getByRole('alert')).toBeVisible();

  // A per-instance rule beside the kind's, then each back to default.
  await form.getByLabel('For').selectOption('instance');
  await form.getByLabel('Instance ID').fill(String(id));
  await form.getByLabel('Mode').selectOption('delay');
  await form.getByLabel('Delay').fill('90');
  await form.getByRole('button', { name: 'Set transitions' }).click();
  await expect(table.getByRole('row').filter({ hasText: `instance ${id}` })).toContainText('after 90 s');
  await screens('emulator-transitions');
  await axe();
  await page.getByRole('button', { name: `Remove the rule for instance ${id}` }).click();
  await expect(table.getByRole('row').filter({ hasText: `instance ${id}` })).toHaveCount(0);
  await page.getByRole('button', { name: 'Clear all transitions' }).click();
  await expect(page.getByText('No rules are set.')).toBeVisible();
  expect((await server.api('GET', '/_emu/transitions')).transitions).toEqual([]);
  await server.api('DELETE', `/api/v0/instances/${id}/`, undefined, renter.api_key);
});
