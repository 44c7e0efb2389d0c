// Volumes (contract §3; spec: volume_info of instance creation): volume offers searched with the offers' filter
// language, create, list, delete, billing while they exist, and linking or creating one when renting an instance.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { addMachine, offerFor, rent, rentOk, statusOf } from './instances-fixtures.js';
import { cumulativeMicro } from '../src/billing/billing-accrual.js';
import { OFFER_ID_STRIDE } from '../src/machines/machines-offers-contract.js';
import { HOURS_PER_MONTH } from '../src/platform/money.js';

const micro = (dollars: number) => Math.round(dollars * 1e6);
const volumeOffer = (machineId: number) => machineId * OFFER_ID_STRIDE;

async function search(app: TestApp, body: unknown, key?: string) {
  return app.request('POST', '/api/v0/volumes/search/', { key, body });
}

async function createVolume(app: TestApp, key: string, body: Record<string, unknown>) {
  return app.request('PUT', '/api/v0/volumes/', { key, body });
}

async function listVolumes(app: TestApp, key: string) {
  const res = await app.request('GET', '/api/v0/volumes?owner=me&type=all', { key });
  assert.equal(res.status, 200, res.raw);
  return res.body.volumes as any[];
}

async function charges(app: TestApp, key: string) {
  const day = { gte: 0, lte: Math.floor(app.clock.now()) + 86_400 };
  const res = await app.request('GET', '/api/v0/charges/', { key, query: { select_filters: JSON.stringify({ day }) } });
  assert.equal(res.status, 200, res.raw);
  return res.body;
}

forEachDialect('volumes', (app) => {
  test('search: each machine offers its free disk; the filter language applies; exact Content-Type', async () => {
    const m = await addMachine(app(), { disk_space: 750, price_disk: 0.12, geolocation: 'Volumes, VA' });
    const res = await search(app(), { geolocation: { eq: 'Volumes, VA' }, disk_space: { gte: '1' }, verified: { eq: true }, external: { eq: false }, allocated_storage: 10, limit: 5 });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.headers['content-type'], 'application/json');
    assert.equal(res.body.offers.length, 1);
    const o = res.body.offers[0];
    assert.equal(o.id, volumeOffer(m.machine_id));
    assert.equal(o.machine_id, m.machine_id);
    assert.equal(o.disk_space, 750);
    assert.equal(o.storage_cost, 0.12);
    assert.ok(Math.abs(o.storage_total_cost - (0.12 * 10) / HOURS_PER_MONTH) < 1e-12);
    for (const f of ['host_id', 'reliability', 'inet_up', 'inet_down', 'duration', 'disk_bw', 'score']) assert.equal(typeof o[f], 'number', f);
    assert.equal(typeof o.geolocation, 'string');
    // Asking for more storage than the machine has leaves it out.
    const big = await search(app(), { geolocation: { eq: 'Volumes, VA' }, allocated_storage: 751 });
    assert.equal(big.body.offers.length, 0);
    const bad = await search(app(), { no_such_field: { eq: 1 } });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error, 'bad_request');
    assert.match(bad.body.msg, /no_such_field/);
    const badValue = await search(app(), { disk_space: { gte: 'lots' } });
    assert.equal(badValue.status, 400);
  });

  test('create, list and delete; space is taken from the offer; errors are 400/402/404', async () => {
    const { api_key } = await app().createUser({ credit: 50 });
    const m = await addMachine(app(), { disk_space: 300, price_disk: 0.1, geolocation: 'Space, SP' });
    const created = await createVolume(app(), api_key, { id: volumeOffer(m.machine_id), size: 120, name: 'data' });
    assert.equal(created.status, 200, created.raw);
    assert.equal(created.body.success, true);
    const id = created.body.volume_id;
    assert.equal(typeof id, 'number');
    const [v] = await listVolumes(app(), api_key);
    assert.equal(v.id, id);
    assert.equal(v.label, 'data');
    assert.equal(v.disk_space, 120);
    assert.equal(v.machine_id, m.machine_id);
    assert.deepEqual(v.instances, []);
    assert.equal((await app().request('GET', '/api/v0/volumes/', { key: api_key })).body.volumes.length, 1, 'with the slash too');
    const after = await search(app(), { geolocation: { eq: 'Space, SP' } });
    assert.equal(after.body.offers[0].disk_space, 180);

    const tooBig = await createVolume(app(), api_key, { id: volumeOffer(m.machine_id), size: 181 });
    assert.equal(tooBig.status, 400);
    assert.match(tooBig.body.msg, /180 GB free/);
    const gpuOffer = await createVolume(app(), api_key, { id: offerFor(m, 1), size: 1 });
    assert.equal(gpuOffer.status, 404, 'a GPU offer id is not a volume offer');
    const missing = await createVolume(app(), api_key, { id: volumeOffer(999_999), size: 1 });
    assert.equal(missing.status, 404);
    const noSize = await createVolume(app(), api_key, { id: volumeOffer(m.machine_id) });
    assert.equal(noSize.status, 400);
    const { api_key: broke } = await app().createUser({ credit: 0 });
    const poor = await createVolume(app(), broke, { id: volumeOffer(m.machine_id), size: 1 });
    assert.equal(poor.status, 402);
    assert.equal(poor.body.error, 'insufficient_credit');

    const { api_key: other } = await app().createUser();
    assert.deepEqual(await listVolumes(app(), other), [], 'someone else sees none of them');
    assert.equal((await app().request('DELETE', `/api/v0/volumes/?id=${id}`, { key: other })).status, 404);
    const noId = await app().request('DELETE', '/api/v0/volumes/', { key: api_key });
    assert.equal(noId.status, 400);
    const del = await app().request('DELETE', `/api/v0/volumes?id=${id}`, { key: api_key });
    assert.equal(del.status, 200, del.raw);
    assert.deepEqual(await listVolumes(app(), api_key), []);
    assert.equal((await app().request('DELETE', `/api/v0/volumes/?id=${id}`, { key: api_key })).status, 404, 'deleted once');
    assert.equal((await search(app(), { geolocation: { eq: 'Space, SP' } })).body.offers[0].disk_space, 300, 'space is free again');
  });

  test('billed per second while it exists, as a volume contract; users/current shows the exact balance', async () => {
    const { api_key } = await app().createUser({ credit: 100 });
    const m = await addMachine(app(), { disk_space: 1000, price_disk: 0.73 });
    const start = Math.floor(app().clock.now());
    const created = await createVolume(app(), api_key, { id: volumeOffer(m.machine_id), size: 500 });
    assert.equal(created.status, 200, created.raw);
    const id = created.body.volume_id;
    await app().advance(1234);
    // 0.73 $/GB/month × 500 GB / 730 h = 0.5 $/h.
    const rate = Math.round((730_000 * 500) / HOURS_PER_MONTH);
    assert.equal(rate, 500_000);
    const soFar = cumulativeMicro(rate, Math.floor(app().clock.now()) - start);
    const me = await app().request('GET', '/api/v0/users/current', { key: api_key });
    assert.equal(micro(me.body.credit), 100_000_000 - soFar, 'the balance counts charges not yet settled');
    await app().advance(100);
    const end = Math.floor(app().clock.now());
    assert.equal((await app().request('DELETE', `/api/v0/volumes/?id=${id}`, { key: api_key })).status, 200);
    await app().advance(5000);
    const body = await charges(app(), api_key);
    assert.equal(body.total, 1);
    const entry = body.results[0];
    assert.equal(entry.source, `volume-${id}`);
    assert.equal(entry.type, 'volume');
    assert.equal(entry.start, start);
    assert.equal(entry.end, end);
    assert.equal(micro(entry.amount), cumulativeMicro(rate, end - start));
    const typed = await app().request('GET', '/api/v0/charges/', {
      key: api_key,
      query: { select_filters: JSON.stringify({ day: { gte: 0, lte: end + 86_400 }, type: { in: ['instance'] } }) },
    });
    assert.equal(typed.body.total, 0, 'a volume is not an instance charge');
  });

  test('volume_info create_new: a volume made on the instance machine, mounted and shown; delete waits for destroy', async () => {
    const { api_key } = await app().createUser({ credit: 100 });
    const m = await addMachine(app(), { num_gpus: 1, disk_space: 400 });
    const { id: inst } = await rentOk(app(), offerFor(m, 1), { volume_info: { create_new: true, volume_id: volumeOffer(m.machine_id), size: 50, mount_path: '/data', name: 'ckpt' } }, api_key);
    const [v] = await listVolumes(app(), api_key);
    assert.equal(v.disk_space, 50);
    assert.equal(v.label, 'ckpt');
    assert.deepEqual(v.instances, [inst]);
    const shown = await statusOf(app(), inst, api_key);
    assert.equal(shown.volume_info.volume_id, v.id);
    assert.equal(shown.volume_info.mount_path, '/data');
    const busy = await app().request('DELETE', `/api/v0/volumes/?id=${v.id}`, { key: api_key });
    assert.equal(busy.status, 409);
    assert.match(busy.body.msg, new RegExp(`instance ${inst}`));
    assert.equal((await app().request('DELETE', `/api/v0/instances/${inst}/`, { key: api_key })).status, 200);
    const [kept] = await listVolumes(app(), api_key);
    assert.deepEqual(kept.instances, [], 'the volume outlives its instance');
    assert.equal((await app().request('DELETE', `/api/v0/volumes/?id=${v.id}`, { key: api_key })).status, 200);
  });

  test('volume_info linking: the volume must exist, be the caller\'s and be on the instance machine', async () => {
    const { api_key } = await app().createUser({ credit: 100 });
    const here = await addMachine(app(), { num_gpus: 2, disk_space: 400 });
    const there = await addMachine(app(), { num_gpus: 1, disk_space: 400 });
    const vol = (await createVolume(app(), api_key, { id: volumeOffer(here.machine_id), size: 10 })).body.volume_id;
    const link = { create_new: false, volume_id: vol, mount_path: '/workspace' };
    const elsewhere = await rent(app(), offerFor(there, 1), { volume_info: link }, api_key);
    assert.equal(elsewhere.status, 400);
    assert.match(elsewhere.body.msg, /machine/);
    const unknown = await rent(app(), offerFor(here, 1), { volume_info: { ...link, volume_id: vol + 1000 } }, api_key);
    assert.equal(unknown.status, 404);
    const { api_key: other } = await app().createUser({ credit: 100 });
    const stolen = await rent(app(), offerFor(here, 1), { volume_info: link }, other);
    assert.equal(stolen.status, 404, "someone else's volume is not found");
    const wrongOffer = await rent(app(), offerFor(there, 1), { volume_info: { create_new: true, volume_id: volumeOffer(here.machine_id), size: 5, mount_path: '/x' } }, api_key);
    assert.equal(wrongOffer.status, 400, 'a new volume must come from the instance machine');
    // Nothing of the failed rentals stayed: both GPUs are still free and no volume was made.
    assert.equal((await listVolumes(app(), api_key)).length, 1);
    const a = await rentOk(app(), offerFor(here, 1), { volume_info: link }, api_key);
    const b = await rentOk(app(), offerFor(here, 1), { volume_info: { ...link, mount_path: '/shared' } }, api_key);
    const [v] = await listVolumes(app(), api_key);
    assert.deepEqual(v.instances, [a.id, b.id], 'two instances of the machine mount it');
    assert.equal((await statusOf(app(), b.id, api_key)).volume_info.mount_path, '/shared');
  });
});
