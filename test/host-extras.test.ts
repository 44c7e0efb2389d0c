// The host-side extras of docs/spec/client-compat-more.md §f: unlisting a volume offer (fully), clusters (bookkeeping records of
// a host's machines), and what needs shared storage or cross-host networking (overlays, network disks and volumes,
// volume copies): a 503 whose msg says what is missing, never a 404 or a fake success; their lists are empty.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { hostMachine, listBody, newHost } from './hosting-fixtures.js';
import { OFFER_ID_STRIDE } from '../src/machines/machines-offers-contract.js';

const volumeOffers = async (app: TestApp, key: string, machineId: number) => {
  const res = await app.request('POST', '/api/v0/volumes/search/', { key, body: { machine_id: { eq: machineId } } });
  assert.equal(res.status, 200, res.raw);
  return res.body.offers as any[];
};

forEachDialect('host extras', (app) => {
  test('unlist volume: the host\'s volume offer leaves search and cannot be rented; volumes made stay; list machine offers it again', async () => {
    const host = await newHost(app());
    const { api_key: renter } = await app().createUser({ credit: 100 });
    const m = await hostMachine(app(), host.id);
    assert.equal((await app().request('PUT', '/api/v0/machines/create_asks/', { key: host.key, body: listBody(m.machine_id) })).status, 200);
    const offerId = m.machine_id * OFFER_ID_STRIDE;
    assert.deepEqual((await volumeOffers(app(), renter, m.machine_id)).map((o) => o.id), [offerId]);
    const made = await app().request('PUT', '/api/v0/volumes/', { key: renter, body: { id: offerId, size: 10 } });
    assert.equal(made.status, 200, made.raw);

    // Another user, a renter, or an id that is no volume offer: 404.
    for (const [key, id] of [[renter, offerId], [host.key, offerId + 1], [host.key, 999_999 * OFFER_ID_STRIDE]] as const) {
      const r = await app().request('POST', '/api/v0/volumes/unlist', { key, body: { id } });
      assert.equal(r.status, 404, r.raw);
      assert.equal(r.body.error, 'not_found');
    }
    const res = await app().request('POST', '/api/v0/volumes/unlist', { key: host.key, body: { id: offerId } });
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body, { success: true, msg: `volume offer ${offerId} unlisted: no new volumes on machine ${m.machine_id}; existing volumes stay` });
    assert.equal((await app().request('POST', '/api/v0/volumes/unlist/', { key: host.key, body: { id: offerId } })).status, 200, 'idempotent, with the slash too');
    assert.deepEqual(await volumeOffers(app(), renter, m.machine_id), []);
    const refused = await app().request('PUT', '/api/v0/volumes/', { key: renter, body: { id: offerId, size: 10 } });
    assert.equal(refused.status, 410, refused.raw);
    const mine = await app().request('GET', '/api/v0/volumes/', { key: renter });
    assert.deepEqual(mine.body.volumes.map((v: any) => v.id), [made.body.id]);

    // `list machine -v 0` keeps it unlisted; `list machine` (vol_size null) offers it again.
    assert.equal((await app().request('PUT', '/api/v0/machines/create_asks/', { key: host.key, body: listBody(m.machine_id, { vol_size: 0 }) })).status, 200);
    assert.deepEqual(await volumeOffers(app(), renter, m.machine_id), []);
    assert.equal((await app().request('PUT', '/api/v0/machines/create_asks/', { key: host.key, body: listBody(m.machine_id) })).status, 200);
    assert.equal((await volumeOffers(app(), renter, m.machine_id)).length, 1);
    for (const body of [{}, { id: 'x' }, { id: 0 }, { id: offerId, extra: 1 }]) {
      const r = await app().request('POST', '/api/v0/volumes/unlist', { key: host.key, body });
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.raw}`);
    }
  });

  test('clusters: records of a host\'s machines, the manager first; another host\'s machines and clusters are refused', async () => {
    const host = await newHost(app());
    const other = await newHost(app());
    const [a, b, c] = [await hostMachine(app(), host.id), await hostMachine(app(), host.id), await hostMachine(app(), host.id)];
    const theirs = await hostMachine(app(), other.id);
    const call = (method: string, url: string, body: unknown, key = host.key) => app().request(method, url, { key, body });

    const created = await call('POST', '/api/v0/cluster/', { subnet: '10.0.0.0/24', manager_id: a.machine_id });
    assert.equal(created.status, 200, created.raw);
    const id = created.body.id;
    assert.match(created.body.msg, /sets up no networking/);
    assert.equal((await call('PUT', '/api/v0/cluster/', { cluster_id: id, machine_ids: [b.machine_id, c.machine_id] })).status, 200);
    const shown = await app().request('GET', '/api/v0/clusters/', { key: host.key });
    assert.deepEqual(shown.body, {
      success: true,
      clusters: {
        [String(id)]: {
          subnet: '10.0.0.0/24',
          nodes: [
            { machine_id: a.machine_id, is_cluster_manager: true, local_ip: null },
            { machine_id: b.machine_id, is_cluster_manager: false, local_ip: null },
            { machine_id: c.machine_id, is_cluster_manager: false, local_ip: null },
          ],
        },
      },
    });
    assert.deepEqual((await app().request('GET', '/api/v0/clusters/', { key: other.key })).body, { success: true, clusters: {} });

    // Refusals: someone else's machine or cluster (404), a machine in a cluster already (409), bad input (400).
    const refusals: [string, unknown, number, string?][] = [
      ['POST', { subnet: '10.1.0.0/24', manager_id: theirs.machine_id }, 404],
      ['POST', { subnet: '10.1.0.0/24', manager_id: a.machine_id }, 409],
      ['POST', { subnet: '10.1.0.0/33', manager_id: theirs.machine_id }, 400],
      ['POST', { subnet: 'lan', manager_id: a.machine_id }, 400],
      ['PUT', { cluster_id: id, machine_ids: [theirs.machine_id] }, 404],
      ['PUT', { cluster_id: id, machine_ids: [] }, 400],
    ];
    for (const [method, body, status] of refusals) {
      const r = await call(method, '/api/v0/cluster/', body);
      assert.equal(r.status, status, `${method} ${JSON.stringify(body)}: ${r.raw}`);
    }
    assert.equal((await call('PUT', '/api/v0/cluster/', { cluster_id: id, machine_ids: [theirs.machine_id] }, other.key)).status, 404);
    assert.equal((await call('DELETE', '/api/v0/cluster/', { cluster_id: id }, other.key)).status, 404);

    // The manager leaves only with a new manager; the last machine leaving deletes the cluster.
    const rm = (body: unknown) => call('DELETE', '/api/v0/cluster/remove_machine/', body);
    assert.equal((await rm({ cluster_id: id, machine_id: a.machine_id })).status, 400);
    assert.equal((await rm({ cluster_id: id, machine_id: a.machine_id, new_manager_id: theirs.machine_id })).status, 400);
    const moved = await rm({ cluster_id: id, machine_id: a.machine_id, new_manager_id: c.machine_id });
    assert.equal(moved.status, 200, moved.raw);
    const after = (await app().request('GET', '/api/v0/clusters/', { key: host.key })).body.clusters[String(id)].nodes;
    assert.deepEqual(after, [
      { machine_id: c.machine_id, is_cluster_manager: true, local_ip: null },
      { machine_id: b.machine_id, is_cluster_manager: false, local_ip: null },
    ]);
    assert.equal((await rm({ cluster_id: id, machine_id: a.machine_id })).status, 404);
    assert.equal((await rm({ cluster_id: id, machine_id: b.machine_id })).status, 200);
    const last = await rm({ cluster_id: id, machine_id: c.machine_id });
    assert.match(last.body.msg, /deleted/);
    assert.deepEqual((await app().request('GET', '/api/v0/clusters/', { key: host.key })).body.clusters, {});
    // Freed machines may form a new cluster, which can be deleted.
    const again = await call('POST', '/api/v0/cluster/', { subnet: '192.168.1.0/24', manager_id: a.machine_id });
    assert.equal(again.status, 200);
    const del = await call('DELETE', '/api/v0/cluster/', { cluster_id: again.body.id });
    assert.deepEqual(del.body, { success: true, msg: `cluster ${again.body.id} deleted` });
  });

  test('overlays, network disks and volumes, volume copies: a 503 naming what is missing; empty lists', async () => {
    const { api_key: key } = await app().createUser({ credit: 10 });
    const refusals: [string, string, unknown, RegExp][] = [
      ['POST', '/api/v0/overlay/', { cluster_id: 1, name: 'net' }, /cross-host|different hosts/],
      ['PUT', '/api/v0/overlay/', { name: 'net', instance_id: 1 }, /VXLAN or WireGuard/],
      ['DELETE', '/api/v0/overlay/', { overlay_name: 'net' }, /overlay/],
      ['POST', '/api/v0/network_disk/', { machines: [1, 2], mount_point: '/mnt/x' }, /shared by several hosts/],
      ['PUT', '/api/v0/network_volumes/', { size: 15, id: 5, name: 'v' }, /NFS, Ceph/],
      ['POST', '/api/v0/network_volumes/', { disk_id: 1, price_disk: 0.15, size: 15 }, /network volumes/],
      ['POST', '/api/v0/network_volumes/unlist/', { id: 5 }, /network volumes/],
      ['POST', '/api/v0/volumes/copy/', { src_id: 1, dst_id: 100, size: 20 }, /host to host/],
    ];
    for (const [method, url, body, msg] of refusals) {
      const r = await app().request(method, url, { key, body });
      assert.equal(r.status, 503, `${method} ${url}: ${r.raw}`);
      assert.equal(r.body.success, false);
      assert.equal(r.body.error, 'service_unavailable');
      assert.match(r.body.msg, msg);
      // A malformed body is the caller's mistake first.
      const bad = await app().request(method, url, { key, body: { nonsense: true } });
      assert.equal(bad.status, 400, `${method} ${url}: ${bad.raw}`);
    }
    assert.deepEqual((await app().request('GET', '/api/v0/overlay/', { key })).body, []);
    assert.deepEqual((await app().request('GET', '/api/v0/network_disk/', { key })).body, { data: [] });
    const search = await app().request('POST', '/api/v0/network_volumes/search/', {
      key, body: { verified: { eq: true }, external: { eq: false }, disk_space: { gte: 1 }, order: [['score', 'desc']], limit: 10, allocated_storage: 1.0 },
    });
    assert.equal(search.status, 200);
    assert.equal(search.headers['content-type'], 'application/json');
    assert.deepEqual(search.body, { offers: [] });
  });
});
