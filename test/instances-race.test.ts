// Race: 64 concurrent clients renting from 200 offers never over-allocate a GPU (issue 3 §3: the offer check, the
// GPU allocation and the instance row are one transaction), on SQLite and PostgreSQL alike.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { addMachine } from './instances-fixtures.js';

const CLIENTS = 64;
const MACHINES = 100; // × 2 GPUs: a 1-GPU and a 2-GPU offer each = 200 offers on 200 GPUs
const ATTEMPTS_PER_CLIENT = 4;

forEachDialect('instances: race', (app) => {
  test(`${CLIENTS} concurrent clients, 200 offers: each GPU goes to at most one instance`, async () => {
    const offers: number[] = [];
    const machines: number[] = [];
    for (let i = 0; i < MACHINES; i++) {
      const m = await addMachine(app(), { num_gpus: 2, price_gpu: 0.01, min_bid: 0.005 });
      machines.push(m.machine_id);
      offers.push(...m.offer_ids);
    }
    assert.equal(offers.length, 200);
    const clients = await Promise.all(Array.from({ length: CLIENTS }, () => app().createUser({ credit: 10_000 })));
    // Every client walks the offers from its own start, so clients collide on the same offers all the time.
    const statuses: number[] = [];
    const won: number[] = [];
    await Promise.all(
      clients.map(async (c, ci) => {
        for (let a = 0; a < ATTEMPTS_PER_CLIENT; a++) {
          const offerId = offers[(ci * 3 + a * 7) % offers.length];
          // Every third attempt is a bid, so bid holds and outbids race with on-demand rentals too.
          const body = a % 3 === 2 ? { image: 'ubuntu', price: 1 + ci / 100 } : { image: 'ubuntu' };
          const res = await app().request('PUT', `/api/v0/asks/${offerId}/`, { key: c.api_key, body });
          statuses.push(res.status);
          if (res.status === 200) won.push(res.body.new_contract);
          else assert.equal(res.body.error, 'offer_unavailable', res.raw);
        }
      }),
    );
    assert.ok(won.length > 0);
    assert.ok(statuses.some((s) => s === 410), 'clients did collide');

    const db = app().store.db;
    const instances = await db.selectFrom('instances').select(['id', 'machine_id', 'gpu_indexes', 'num_gpus', 'intended_status', 'actual_status'])
      .where('machine_id', 'in', machines).where('destroyed_at', 'is', null).execute();
    assert.equal(instances.length, won.length, 'one instance row per success, none for a failure');
    const holders = new Map<string, number>();
    for (const inst of instances) {
      const gpus = JSON.parse(inst.gpu_indexes) as number[];
      if (inst.actual_status === 'stopped') {
        assert.equal(gpus.length, 0, 'an outbid instance holds nothing');
        continue;
      }
      assert.equal(gpus.length, inst.num_gpus);
      for (const g of gpus) {
        const key = `${inst.machine_id}:${g}`;
        assert.ok(!holders.has(key), `GPU ${key} held by ${holders.get(key)} and ${inst.id}`);
        holders.set(key, inst.id);
      }
    }
    const rows = await db.selectFrom('fleet_gpus').select(['machine_id', 'gpu_index', 'instance_id']).where('machine_id', 'in', machines).execute();
    const held = rows.filter((r) => r.instance_id !== null);
    assert.equal(held.length, holders.size, 'the fleet and the instances agree on every held GPU');
    for (const r of held) assert.equal(holders.get(`${r.machine_id}:${r.gpu_index}`), r.instance_id);
  });
  test('stops racing rentals that outbid the same instances: no 500, and the GPUs still agree', async () => {
    const machines: { machine_id: number; offer_ids: number[] }[] = [];
    for (let i = 0; i < 16; i++) machines.push(await addMachine(app(), { num_gpus: 1, price_gpu: 0.01, min_bid: 0.005 }));
    const bidder = await app().createUser({ credit: 10_000 });
    const renter = await app().createUser({ credit: 10_000 });
    const bids = [];
    for (const m of machines) {
      const res = await app().request('PUT', `/api/v0/asks/${m.offer_ids[0]}/`, { key: bidder.api_key, body: { image: 'ubuntu', price: 0.01 } });
      assert.equal(res.status, 200, res.raw);
      bids.push(res.body.new_contract as number);
    }
    const replies = await Promise.all([
      ...bids.map((id) => app().request('PUT', `/api/v0/instances/${id}/`, { key: bidder.api_key, body: { state: 'stopped' } })),
      ...machines.map((m) => app().request('PUT', `/api/v0/asks/${m.offer_ids[0]}/`, { key: renter.api_key, body: { image: 'ubuntu' } })),
      ...bids.map((id) => app().request('PUT', `/api/v0/instances/bid_price/${id}/`, { key: bidder.api_key, body: { price: 0.02 } })),
    ]);
    for (const r of replies) assert.ok(r.status < 500, r.raw);
    const rows = await app().store.db.selectFrom('fleet_gpus').select(['machine_id', 'instance_id']).where('machine_id', 'in', machines.map((m) => m.machine_id)).execute();
    for (const r of rows) {
      if (r.instance_id === null) continue;
      const inst = await app().store.db.selectFrom('instances').selectAll().where('id', '=', r.instance_id).executeTakeFirstOrThrow();
      assert.equal(inst.machine_id, r.machine_id);
      assert.notEqual(inst.actual_status, 'stopped', `instance ${inst.id} holds a GPU while stopped`);
    }
  });
});
