// The fleet: bundles, GPU allocation through MachinesApi (contract §6), bids and outbids, machine faults,
// POST /_emu/machines, seeding and /_emu/reset (contract §1, §2).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, forEachDialect, type TestApp } from './helpers/harness.js';
import type { AllocateRequest } from '../src/machines/machines-contract.js';
import { ApiError } from '../src/platform/errors.js';

async function search(app: TestApp, body: unknown) {
  return app.request('POST', '/api/v0/bundles/', { body });
}

async function addMachine(app: TestApp, body: Record<string, unknown>): Promise<{ machine_id: number; offer_ids: number[] }> {
  const res = await app.request('POST', '/_emu/machines', { body });
  assert.equal(res.status, 200, res.raw);
  return res.body;
}

let nextInstance = 500_000;
const instanceId = () => nextInstance++;

async function allocate(app: TestApp, req: Omit<AllocateRequest, 'instanceId'> & { instanceId?: number }) {
  const full = { instanceId: instanceId(), ...req };
  return app.store.db.transaction().execute((tx) => app.services.fleet.allocate(tx, full)).then((a) => ({ ...a, instanceId: full.instanceId }));
}

async function rejects(p: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(p, (err: unknown) => err instanceof ApiError && err.code === code);
}

/** The machine's offers as search shows them: `{num_gpus: rented}`. */
async function shown(app: TestApp, machineId: number, body: object = {}) {
  const res = await search(app, { machine_id: { eq: machineId }, order: [['num_gpus', 'asc']], ...body });
  assert.equal(res.status, 200, res.raw);
  return Object.fromEntries(res.body.offers.map((o: any) => [o.num_gpus, o.rented]));
}

forEachDialect('fleet', (app) => {
  test('a machine offers its free GPUs in bundles; renting part leaves the rest on offer', async () => {
    const { machine_id, offer_ids } = await addMachine(app(), { num_gpus: 8 });
    assert.deepEqual(offer_ids, [1, 2, 4, 8].map((k) => machine_id * 100 + k));
    assert.deepEqual(await shown(app(), machine_id), { 1: false, 2: false, 4: false, 8: false });

    const a = await allocate(app(), { offerId: machine_id * 100 + 2, kind: 'ondemand' });
    assert.deepEqual(a.gpuIndexes, [0, 1]);
    assert.equal(a.machineId, machine_id);
    assert.equal(a.offer.num_gpus, 2);
    assert.deepEqual(a.outbid, []);
    assert.deepEqual(await shown(app(), machine_id), { 1: false, 2: false, 4: false });

    const b = await allocate(app(), { offerId: machine_id * 100 + 4, kind: 'ondemand' });
    assert.deepEqual(b.gpuIndexes, [2, 3, 4, 5]);
    assert.deepEqual(await shown(app(), machine_id), { 1: false, 2: false });
    await rejects(allocate(app(), { offerId: machine_id * 100 + 4, kind: 'ondemand' }), 'offer_unavailable');
    assert.equal(await app().services.fleet.getOffer(machine_id * 100 + 4), undefined);

    await app().store.db.transaction().execute((tx) => app().services.fleet.release(tx, a.instanceId));
    assert.deepEqual(await shown(app(), machine_id), { 1: false, 2: false, 4: false });
    const c = await allocate(app(), { offerId: machine_id * 100 + 4, kind: 'ondemand' });
    assert.deepEqual(c.gpuIndexes, [0, 1, 6, 7]);
  });

  test('no GPU is ever allocated twice, under concurrent renters', async () => {
    const { machine_id } = await addMachine(app(), { num_gpus: 4 });
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, () => allocate(app(), { offerId: machine_id * 100 + 1, kind: 'ondemand' })),
    );
    const won = results.filter((r) => r.status === 'fulfilled').map((r) => (r as PromiseFulfilledResult<any>).value);
    const lost = results.filter((r) => r.status === 'rejected') as PromiseRejectedResult[];
    assert.equal(won.length, 4);
    assert.ok(lost.every((r) => r.reason instanceof ApiError && r.reason.code === 'offer_unavailable'), String(lost[0]?.reason));
    assert.deepEqual(won.flatMap((w) => w.gpuIndexes).sort(), [0, 1, 2, 3]);
    const rows = await app().store.db.selectFrom('fleet_gpus').selectAll().where('machine_id', '=', machine_id).execute();
    assert.deepEqual(rows.map((r) => r.instance_id).sort(), won.map((w) => w.instanceId).sort());
    assert.deepEqual(await shown(app(), machine_id), {});
  });

  test('bid GPUs stay on offer as rented; on-demand and higher bids outbid; lower bids cannot', async () => {
    const { machine_id } = await addMachine(app(), { num_gpus: 2, price_gpu: 1, min_bid: 0.3 });
    await rejects(allocate(app(), { offerId: machine_id * 100 + 2, kind: 'bid', bidPerGpuMicro: 200_000 }), 'bad_request');
    const a = await allocate(app(), { offerId: machine_id * 100 + 2, kind: 'bid', bidPerGpuMicro: 500_000 });
    assert.deepEqual(await shown(app(), machine_id), { 1: true, 2: true });
    const bidView = (await search(app(), { machine_id: { eq: machine_id }, num_gpus: { eq: 2 }, type: 'bid' })).body.offers[0];
    assert.equal(bidView.min_bid, 2 * 0.501, 'a bid must beat the held bid');

    await rejects(allocate(app(), { offerId: machine_id * 100 + 1, kind: 'bid', bidPerGpuMicro: 500_000 }), 'offer_unavailable');
    const b = await allocate(app(), { offerId: machine_id * 100 + 1, kind: 'bid', bidPerGpuMicro: 600_000 });
    assert.deepEqual(b.outbid, [a.instanceId]);
    // The outbid instance lost both GPUs: one went to the new bidder, one is free.
    assert.deepEqual(await shown(app(), machine_id), { 1: false, 2: true });

    const c = await allocate(app(), { offerId: machine_id * 100 + 2, kind: 'ondemand' });
    assert.deepEqual(c.outbid, [b.instanceId]);
    assert.deepEqual(c.gpuIndexes, [0, 1]);
    assert.deepEqual(await shown(app(), machine_id), {});
    await rejects(allocate(app(), { offerId: machine_id * 100 + 1, kind: 'bid', bidPerGpuMicro: 10_000_000 }), 'offer_unavailable');
  });

  test('setBid moves the bid floor; reallocate returns null when the GPUs are taken', async () => {
    const { machine_id } = await addMachine(app(), { num_gpus: 1, price_gpu: 1, min_bid: 0.3 });
    const a = await allocate(app(), { offerId: machine_id * 100 + 1, kind: 'bid', bidPerGpuMicro: 400_000 });
    await app().store.db.transaction().execute((tx) => app().services.fleet.setBid(tx, a.instanceId, 700_000));
    assert.equal((await search(app(), { machine_id: { eq: machine_id }, type: 'bid' })).body.offers[0].min_bid, 0.701);
    await app().store.db.transaction().execute((tx) => app().services.fleet.release(tx, a.instanceId));
    const b = await allocate(app(), { offerId: machine_id * 100 + 1, kind: 'ondemand' });
    const again = await app().store.db
      .transaction()
      .execute((tx) => app().services.fleet.reallocate(tx, { instanceId: a.instanceId, machineId: machine_id, numGpus: 1, kind: 'bid', bidPerGpuMicro: 900_000 }));
    assert.equal(again, null);
    await app().store.db.transaction().execute((tx) => app().services.fleet.release(tx, b.instanceId));
    const back = await app().store.db
      .transaction()
      .execute((tx) => app().services.fleet.reallocate(tx, { instanceId: a.instanceId, machineId: machine_id, numGpus: 1, kind: 'ondemand' }));
    assert.deepEqual(back, { gpuIndexes: [0], outbid: [] });
  });

  test('a machine fault offline/unknown makes its offers unrentable (410 to rent); recovery restores them', async () => {
    const { machine_id } = await addMachine(app(), { num_gpus: 1 });
    const fleet = app().services.fleet;
    await app().store.db.transaction().execute((tx) => fleet.setMachineFault(tx, machine_id, 'offline'));
    assert.equal((await fleet.machine(machine_id))?.fault, 'offline');
    const res = await search(app(), { machine_id: { eq: machine_id } });
    assert.equal(res.body.offers[0].rentable, false);
    assert.deepEqual((await search(app(), { machine_id: { eq: machine_id }, rentable: { eq: true } })).body.offers, []);
    await rejects(allocate(app(), { offerId: machine_id * 100 + 1, kind: 'ondemand' }), 'offer_unavailable');
    await app().store.db.transaction().execute((tx) => fleet.setMachineFault(tx, machine_id, null));
    assert.equal((await search(app(), { machine_id: { eq: machine_id } })).body.offers[0].rentable, true);
    await rejects(app().store.db.transaction().execute((tx) => fleet.setMachineFault(tx, 99_999_999, 'offline')), 'not_found');
  });

  test('MachineInfo carries the host prices in micro-dollars', async () => {
    const { machine_id } = await addMachine(app(), { num_gpus: 2, price_gpu: 0.45, price_disk: 0.1, price_inetu: 0.02, price_inetd: 0.01, min_bid: 0.2, direct_port_count: 50 });
    const m = await app().services.fleet.machine(machine_id);
    assert.equal(m?.price_gpu_micro, 450_000);
    assert.equal(m?.price_disk_micro, 100_000);
    assert.equal(m?.price_inetu_micro, 20_000);
    assert.equal(m?.price_inetd_micro, 10_000);
    assert.equal(m?.min_bid_micro, 200_000);
    assert.equal(m?.direct_port_count, 50);
    assert.equal(m?.num_gpus, 2);
    assert.equal(m?.fault, null);
    assert.equal(await app().services.fleet.machine(99_999_999), undefined);
  });

  test('POST /_emu/machines: catalogue defaults, strict body, admin only', async () => {
    const { machine_id } = await addMachine(app(), { gpu_name: 'H100 SXM', num_gpus: 8 });
    const o = (await search(app(), { machine_id: { eq: machine_id }, num_gpus: { eq: 1 } })).body.offers[0];
    assert.equal(o.gpu_name, 'H100 SXM');
    assert.equal(o.gpu_ram, 81559);
    assert.equal(o.dph_base, 2.3);
    assert.equal(o.verified, true);
    const unknown = await app().request('POST', '/_emu/machines', { body: { gpu_nme: 'x' } });
    assert.equal(unknown.status, 400);
    assert.match(unknown.body.msg, /gpu_nme/);
    assert.equal((await app().request('POST', '/_emu/machines', { body: { num_gpus: 0 } })).status, 400);
    const { api_key } = await app().createUser();
    assert.equal((await app().request('POST', '/_emu/machines', { body: {}, key: api_key })).status, 403);
  });

  test('/_emu/reset brings back the same seeded fleet, without added machines or allocations', async () => {
    const before = (await app().request('POST', '/_emu/reset')).status;
    assert.equal(before, 200);
    const fresh = (await search(app(), { limit: 1000 })).body.offers;
    const { machine_id } = await addMachine(app(), { num_gpus: 1 });
    await allocate(app(), { offerId: fresh[0].id, kind: 'ondemand' });
    assert.equal((await app().request('POST', '/_emu/reset')).status, 200);
    const again = (await search(app(), { limit: 1000 })).body.offers;
    assert.deepEqual(again, fresh);
    assert.deepEqual((await search(app(), { machine_id: { eq: machine_id } })).body.offers, []);
  });
});

forEachDialect('fleet seeding', (app, dialect) => {
  test('the same seed gives the same fleet; another seed another one', async () => {
    const same = await createTestApp(dialect, { config: { GPUPLANE_SEED: '1' } });
    const other = await createTestApp(dialect, { config: { GPUPLANE_SEED: '2' } });
    try {
      const a = (await search(app(), { limit: 1000 })).body.offers;
      assert.deepEqual((await search(same, { limit: 1000 })).body.offers, a);
      assert.notDeepEqual((await search(other, { limit: 1000 })).body.offers, a);
      const machines = new Set(a.map((o: any) => o.machine_id));
      assert.equal(machines.size, 20);
    } finally {
      await same.close();
      await other.close();
    }
  });

  test('production mode has no simulated fleet', async () => {
    const prod = await createTestApp(dialect, { config: { GPUPLANE_MODE: 'production' } });
    try {
      assert.deepEqual((await search(prod, { limit: 1000 })).body.offers, []);
      assert.deepEqual((await prod.request('GET', '/api/v0/gpu_names/unique/', { key: null })).body.gpu_names, []);
      assert.equal((await prod.request('POST', '/_emu/machines', { body: {} })).status, 404);
    } finally {
      await prod.close();
    }
  });
});
