// Volumes on real hosts, the server's half (issue 33 item 2): a host's `create_asks` vol_size/vol_price shape its
// machine's volume offer in `search volumes` (as the vastai client documents -v and -z) and the price a volume there is
// billed at until it is deleted; a real host's desired state lists its live volumes and each instance's mounts, and
// its version moves with them (the idle heartbeat path does not hide a machine with a volume). Both databases.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { hostMachine, listBody, newHost } from './hosting-fixtures.js';
import { desired, hostWithMachine, observed, report } from './agent-server-fixtures.js';
import { cumulativeMicro } from '../src/billing/billing-accrual.js';
import { OFFER_ID_STRIDE } from '../src/machines/machines-offers-contract.js';
import { HOURS_PER_MONTH } from '../src/platform/money.js';

const micro = (dollars: number) => Math.round(dollars * 1e6);
const volumeOffer = (machineId: number) => machineId * OFFER_ID_STRIDE;

async function offerOf(app: TestApp, machineId: number): Promise<any | undefined> {
  const res = await app.request('POST', '/api/v0/volumes/search/', { body: { machine_id: { eq: machineId }, limit: 10 } });
  assert.equal(res.status, 200, res.raw);
  return res.body.offers[0];
}

async function createAsks(app: TestApp, key: string, body: Record<string, unknown>) {
  return app.request('PUT', '/api/v0/machines/create_asks/', { key, body });
}

forEachDialect('volumes-asks', (app) => {
  test('a held desired-state poll answers when a volume is made on its machine', async () => {
    const host = await hostWithMachine(app());
    const first = await desired(app(), host);
    const { api_key } = await app().createUser({ credit: 100 });
    const held = app().request('GET', '/api/v0/agent/desired/', { key: host.machineKey, query: { after: String(first.version), wait: '20' } });
    await new Promise((r) => setTimeout(r, 300));
    const created = await app().request('PUT', '/api/v0/volumes/', { key: api_key, body: { id: volumeOffer(host.machineId), size: 5 } });
    assert.equal(created.status, 200, created.raw);
    const t0 = Date.now();
    const res = await held;
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body.volumes, [{ volume_id: created.body.volume_id, size_gb: 5 }]);
    assert.ok(Date.now() - t0 < 15_000, 'answered on the change, not at the end of its wait');
  });

  test('create_asks vol_size and vol_price: the offer is vol_size GB (null: half the free disk, never above it) at vol_price (null: price_disk); 0 unlists', async () => {
    const host = await newHost(app());
    const m = await hostMachine(app(), host.id, { disk_space: 500, price_disk: 0.1 });
    // Before any ask: the whole free disk at price_disk (as before issue 33).
    let o = await offerOf(app(), m.machine_id);
    assert.deepEqual([o.disk_space, o.storage_cost], [500, 0.1]);

    let res = await createAsks(app(), host.key, listBody(m.machine_id, { vol_size: 120, vol_price: 0.35 }));
    assert.equal(res.status, 200, res.raw);
    o = await offerOf(app(), m.machine_id);
    assert.deepEqual([o.id, o.disk_space, o.storage_cost], [volumeOffer(m.machine_id), 120, 0.35]);

    // The vastai client sends both keys, null when not given: half the free disk, at price_disk.
    res = await createAsks(app(), host.key, listBody(m.machine_id, { price_disk: 0.2 }));
    assert.equal(res.status, 200, res.raw);
    o = await offerOf(app(), m.machine_id);
    assert.deepEqual([o.disk_space, o.storage_cost], [250, 0.2]);

    // More than the machine has: its free disk.
    res = await createAsks(app(), host.key, listBody(m.machine_id, { vol_size: 10_000, vol_price: 0.3 }));
    assert.equal(res.status, 200, res.raw);
    o = await offerOf(app(), m.machine_id);
    assert.deepEqual([o.disk_space, o.storage_cost], [500, 0.3]);

    // A body without the keys (not the vastai client) leaves the ask as it was.
    res = await createAsks(app(), host.key, { machine: m.machine_id, price_gpu: 0.5 });
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual([(await offerOf(app(), m.machine_id)).storage_cost], [0.3]);

    // 0: no volume offer; a price with it is a mistake the client documents ("Invalid if vol_size is 0").
    const both = await createAsks(app(), host.key, listBody(m.machine_id, { vol_size: 0, vol_price: 0.2 }));
    assert.equal(both.status, 400, both.raw);
    assert.equal(both.body.error, 'bad_request');
    assert.match(both.body.msg, /vol_price/);
    res = await createAsks(app(), host.key, listBody(m.machine_id, { vol_size: 0 }));
    assert.equal(res.status, 200, res.raw);
    assert.equal(await offerOf(app(), m.machine_id), undefined);
    res = await createAsks(app(), host.key, listBody(m.machine_id, { vol_size: 40 }));
    assert.equal(res.status, 200, res.raw);
    assert.equal((await offerOf(app(), m.machine_id)).disk_space, 40, 'listed again');

    const neg = await createAsks(app(), host.key, listBody(m.machine_id, { vol_size: -1 }));
    assert.equal(neg.status, 400, neg.raw);
  });

  test('vastai list volume(s) (POST /api/v0/volumes/): the host offers size GB at price_disk on its machines; not theirs 404; bad bodies 400', async () => {
    const host = await newHost(app());
    const m1 = await hostMachine(app(), host.id, { disk_space: 400, price_disk: 0.1 });
    const m2 = await hostMachine(app(), host.id, { disk_space: 300, price_disk: 0.1 });
    // vast.py's `list volume ID -s 15 -p 0.1` body, and `list volumes ID ID …` with a list.
    let res = await app().request('POST', '/api/v0/volumes/', { key: host.key, body: { size: 15, machine: m1.machine_id, price_disk: 0.12 } });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.success, true);
    assert.match(res.body.msg, /15 GB for volumes at \$0\.12\/GB\/month/);
    assert.deepEqual([(await offerOf(app(), m1.machine_id)).disk_space, (await offerOf(app(), m1.machine_id)).storage_cost], [15, 0.12]);
    res = await app().request('POST', '/api/v0/volumes', { key: host.key, body: { size: 40, machine: [m1.machine_id, m2.machine_id], price_disk: 0.2, end_date: 1_900_000_000 } });
    assert.equal(res.status, 200, res.raw);
    assert.match(res.body.msg, /end_date is not kept/);
    for (const m of [m1, m2]) assert.equal((await offerOf(app(), m.machine_id)).disk_space, 40);

    const other = await newHost(app());
    const theirs = await app().request('POST', '/api/v0/volumes/', { key: other.key, body: { size: 10, machine: [m2.machine_id], price_disk: 0.1 } });
    assert.equal(theirs.status, 404, theirs.raw);
    assert.equal(theirs.body.error, 'not_found');
    assert.equal((await offerOf(app(), m2.machine_id)).disk_space, 40, 'nothing changed');
    for (const body of [{ size: -1, machine: m1.machine_id, price_disk: 0.1 }, { size: 10, machine: m1.machine_id }, { size: 10, machine: [], price_disk: 0.1 }, { size: 10, machine: m1.machine_id, price_disk: 0.1, user_id: 1 }]) {
      const bad = await app().request('POST', '/api/v0/volumes/', { key: host.key, body });
      assert.equal(bad.status, 400, `${JSON.stringify(body)}: ${bad.raw}`);
      assert.equal(bad.body.success, false);
    }
    // Size 0: no volume offer.
    res = await app().request('POST', '/api/v0/volumes/', { key: host.key, body: { size: 0, machine: m1.machine_id, price_disk: 0.1 } });
    assert.equal(res.status, 200, res.raw);
    assert.equal(await offerOf(app(), m1.machine_id), undefined);
  });

  test('a volume takes its space from the ask and is billed at vol_price from creation until deleted', async () => {
    const host = await newHost(app());
    const m = await hostMachine(app(), host.id, { disk_space: 900, price_disk: 0.1 });
    assert.equal((await createAsks(app(), host.key, listBody(m.machine_id, { vol_size: 100, vol_price: 0.73 }))).status, 200);
    const { api_key } = await app().createUser({ credit: 100 });
    const over = await app().request('PUT', '/api/v0/volumes/', { key: api_key, body: { id: volumeOffer(m.machine_id), size: 101 } });
    assert.equal(over.status, 400, over.raw);
    assert.match(over.body.msg, /100 GB free/);

    const start = Math.floor(app().clock.now());
    const created = await app().request('PUT', '/api/v0/volumes/', { key: api_key, body: { id: volumeOffer(m.machine_id), size: 50 } });
    assert.equal(created.status, 200, created.raw);
    const id = created.body.volume_id;
    assert.equal((await offerOf(app(), m.machine_id)).disk_space, 50);
    const [v] = (await app().request('GET', '/api/v0/volumes/', { key: api_key })).body.volumes;
    // 0.73 $/GB/month × 50 GB / 730 h = 0.05 $/h.
    const rate = Math.round((730_000 * 50) / HOURS_PER_MONTH);
    assert.equal(v.storage_cost, 0.73);
    assert.equal(micro(v.dph_total), rate);

    // A later ask changes the offer, not the price of the volume already made.
    assert.equal((await createAsks(app(), host.key, listBody(m.machine_id, { vol_size: 100, vol_price: 2 }))).status, 200);
    await app().advance(3600);
    const end = Math.floor(app().clock.now());
    assert.equal((await app().request('DELETE', `/api/v0/volumes/?id=${id}`, { key: api_key })).status, 200);
    await app().advance(7200);
    const day = { gte: 0, lte: end + 86_400 };
    const charges = (await app().request('GET', '/api/v0/charges/', { key: api_key, query: { select_filters: JSON.stringify({ day }) } })).body;
    assert.equal(charges.total, 1);
    assert.equal(charges.results[0].source, `volume-${id}`);
    assert.equal(charges.results[0].end, end, 'billing stopped at the delete');
    assert.equal(micro(charges.results[0].amount), cumulativeMicro(rate, end - start));
  });

  test('a real host\'s desired state lists its live volumes and each instance\'s mounts; its version moves with them', async () => {
    const host = await hostWithMachine(app(), { hw: { disk_space: 800 } });
    const empty = await desired(app(), host);
    assert.deepEqual(empty.volumes, []);
    // Idle: the heartbeat's empty desired state is this one.
    assert.equal((await report(app(), host, [], empty.version)).desired_version, empty.version);

    const { api_key } = await app().createUser({ credit: 100 });
    const created = await app().request('PUT', '/api/v0/volumes/', { key: api_key, body: { id: volumeOffer(host.machineId), size: 20 } });
    assert.equal(created.status, 200, created.raw);
    const vid = created.body.volume_id;
    const withVolume = await desired(app(), host);
    assert.deepEqual(withVolume.volumes, [{ volume_id: vid, size_gb: 20 }]);
    assert.notEqual(withVolume.version, empty.version);
    assert.equal((await report(app(), host, [], withVolume.version)).desired_version, withVolume.version, 'a machine with a volume is not answered as idle');

    // Rent with it mounted, and with a new one: both listed; the instance mounts them.
    const rented = await app().request('PUT', `/api/v0/asks/${host.machineId * OFFER_ID_STRIDE + 1}/`, {
      key: api_key, body: { image: 'busybox', runtype: 'ssh_proxy', volume_info: { volume_id: vid, mount_path: '/data', create_new: false } },
    });
    assert.equal(rented.status, 200, rented.raw);
    const d = await desired(app(), host);
    const inst = d.instances.find((i: any) => i.instance_id === rented.body.new_contract);
    assert.deepEqual(inst.mounts, [{ volume_id: vid, mount_path: '/data' }]);
    // The agent's note on a running instance (a volume over its size on a host without quotas) is its status_msg.
    const note = `volume ${vid} holds 25.0 GB, over its 20 GB: this host cannot enforce the size, so delete files or the writes may fill the host's disk`;
    await report(app(), host, [observed(inst.instance_id, inst.boot, { note })], d.version);
    const shown = (await app().request('GET', `/api/v0/instances/${inst.instance_id}/`, { key: api_key })).body.instances;
    assert.deepEqual([shown.actual_status, shown.status_msg], ['running', note]);
    await report(app(), host, [observed(inst.instance_id, inst.boot)], d.version);
    assert.equal((await app().request('GET', `/api/v0/instances/${inst.instance_id}/`, { key: api_key })).body.instances.status_msg, null, 'gone once back under');
    const badPath = await app().request('PUT', `/api/v0/asks/${host.machineId * OFFER_ID_STRIDE + 1}/`, {
      key: api_key, body: { image: 'busybox', volume_info: { volume_id: vid, mount_path: '/', create_new: false } },
    });
    assert.equal(badPath.status, 400, badPath.raw);
    assert.match(badPath.body.msg, /mount_path/);

    // Destroy, then delete: the volume leaves the desired state (its agent removes it) and the version is the empty one.
    assert.equal((await app().request('DELETE', `/api/v0/instances/${rented.body.new_contract}/`, { key: api_key })).status, 200);
    const kept = await desired(app(), host);
    assert.deepEqual(kept.volumes, [{ volume_id: vid, size_gb: 20 }], 'a volume outlives its instance');
    assert.equal((await app().request('DELETE', `/api/v0/volumes/?id=${vid}`, { key: api_key })).status, 200);
    const gone = await desired(app(), host);
    assert.deepEqual(gone.volumes, []);
    assert.equal(gone.version, empty.version);
  });
});
