// Threat: a host reads or changes another host's machines. Hosts see and change their own machines only (another's
// is a 404, as if it did not exist, and stays as it was); admins see and change all; a renter sees the maintenance
// windows of a machine only while it has an instance there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { offerFor, rentOk } from './instances-fixtures.js';
import { hostMachine, listBody, newHost } from './hosting-fixtures.js';

forEachDialect('hosting security', (app) => {
  test('a host can neither see nor change another host\'s machine', async () => {
    const a = await newHost(app());
    const b = await newHost(app());
    const m = await hostMachine(app(), a.id, { num_gpus: 2, price_gpu: 0.5, min_bid: 0.2 });
    const id = m.machine_id;
    const before = (await app().request('GET', `/api/v0/machines/${id}`, { key: a.key })).body;
    const attempts: [string, string, unknown?][] = [
      ['GET', `/api/v0/machines/${id}?owner=me`],
      ['GET', `/api/v0/machines/maintenances?owner=me&machine_ids=[${id}]`],
      ['GET', `/api/v0/machines/${id}/reports/`, { machine_id: id }],
      ['PUT', '/api/v0/machines/create_asks/', listBody(id, { price_gpu: 9 })],
      ['DELETE', `/api/v0/machines/${id}/asks/`, {}],
      ['PUT', `/api/v0/machines/${id}/minbid/`, { client_id: 'me', price: 0.01 }],
      ['PUT', '/api/v0/machines/create_bids/', { machine: id, price_gpu: 1, price_inetu: null, price_inetd: null, image: 'evil/miner', args: null }],
      ['DELETE', `/api/v0/machines/${id}/defjob/`, {}],
      ['PUT', `/api/v0/machines/${id}/dnotify/`, { client_id: 'me', sdate: app().clock.now(), duration: 100, maintenance_category: 'other' }],
      ['PUT', `/api/v0/machines/${id}/cancel_maint/`, { client_id: 'me', machine_id: id }],
      ['PUT', `/api/v0/machines/${id}/cleanup/`, {}],
      ['POST', `/api/v0/machines/${id}/force_delete/`, {}],
      ['PUT', '/api/v0/machines/defrag_offers/', { machine_ids: [id] }],
      ['GET', `/api/v0/users/me/machine-earnings?owner=me&sday=0.0&eday=99999.0&machid=${id}`],
    ];
    for (const [method, url, body] of attempts) {
      const res = await app().request(method, url, { key: b.key, body });
      assert.equal(res.status, 404, `${method} ${url}: ${res.raw}`);
      assert.deepEqual(res.body, { success: false, error: 'not_found', msg: `machine ${id} not found` }, `${method} ${url}`);
    }
    assert.deepEqual((await app().request('GET', '/api/v0/machines?owner=me', { key: b.key })).body.machines, []);
    const all = await app().request('GET', '/api/v0/machines?owner=all', { key: b.key });
    assert.equal(all.status, 403);
    assert.equal(all.body.error, 'permission_denied');
    const after = (await app().request('GET', `/api/v0/machines/${id}`, { key: a.key })).body;
    assert.deepEqual(after, before, 'the machine is as it was');
  });

  test('an admin sees every host\'s machines and may change them', async () => {
    const a = await newHost(app());
    const m = await hostMachine(app(), a.id);
    const all = await app().request('GET', '/api/v0/machines?owner=all');
    assert.equal(all.status, 200, all.raw);
    assert.ok(all.body.machines.some((r: any) => r.id === m.machine_id));
    const mine = await app().request('GET', '/api/v0/machines?owner=me');
    assert.ok(!mine.body.machines.some((r: any) => r.id === m.machine_id), 'owner=me is the admin\'s own machines');
    assert.equal((await app().request('GET', `/api/v0/machines/${m.machine_id}`)).status, 200);
    const unlisted = await app().request('DELETE', `/api/v0/machines/${m.machine_id}/asks/`, { body: {} });
    assert.equal(unlisted.status, 200, unlisted.raw);
    assert.equal((await app().request('GET', `/api/v0/machines/${m.machine_id}`, { key: a.key })).body[0].listed, false);
  });

  test('a renter sees the maintenance windows of a machine only while renting on it', async () => {
    const host = await newHost(app());
    const renter = await newHost(app(), 50);
    const m = await hostMachine(app(), host.id);
    const sdate = app().clock.now() + 86_400;
    assert.equal((await app().request('PUT', `/api/v0/machines/${m.machine_id}/dnotify/`, { key: host.key, body: { client_id: 'me', sdate, duration: 1, maintenance_category: 'disk' } })).status, 200);
    const url = `/api/v0/machines/maintenances?owner=me&machine_ids=[${m.machine_id}]`;
    assert.equal((await app().request('GET', url, { key: renter.key })).status, 404);
    const { id } = await rentOk(app(), offerFor(m, 1), {}, renter.key);
    const seen = await app().request('GET', url, { key: renter.key });
    assert.equal(seen.status, 200, seen.raw);
    assert.deepEqual(seen.body.map((w: any) => w.maintenance_category), ['disk']);
    // The renter does not see the machine itself, nor change its windows.
    assert.equal((await app().request('GET', `/api/v0/machines/${m.machine_id}`, { key: renter.key })).status, 404);
    assert.equal((await app().request('PUT', `/api/v0/machines/${m.machine_id}/cancel_maint/`, { key: renter.key, body: {} })).status, 404);
    assert.equal((await app().request('DELETE', `/api/v0/instances/${id}/`, { key: renter.key })).status, 200);
    assert.equal((await app().request('GET', url, { key: renter.key })).status, 404, 'not after the rental ends');
  });

  test('a key without machine_write cannot list a machine; machine_read shows it', async () => {
    const a = await newHost(app());
    const m = await hostMachine(app(), a.id, { listed: false });
    const made = await app().request('POST', '/api/v0/auth/apikeys/', { key: a.key, body: { name: 'read only', permissions: { api: { machine_read: {} } } } });
    assert.equal(made.status, 200, made.raw);
    const ro = made.body.key;
    assert.equal((await app().request('GET', '/api/v0/machines?owner=me', { key: ro })).status, 200);
    const res = await app().request('PUT', '/api/v0/machines/create_asks/', { key: ro, body: listBody(m.machine_id) });
    assert.equal(res.status, 403);
    assert.equal(res.body.error, 'permission_denied');
    assert.equal((await app().request('GET', `/api/v0/machines/${m.machine_id}`, { key: a.key })).body[0].listed, false);
  });
});
