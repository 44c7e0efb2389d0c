// Offer search over columns (src/offers/offer-search.ts, offer-columns.ts, offer-json.ts) must answer exactly as the
// row-by-row reference (`selectRows` in filter.ts over the index's offer objects, each field read through its `get`,
// serialized with JSON.stringify of offerJson): same offers, same order, same bytes. Also after the fleet changes
// (rent, release, fault, new machine, time passing), when the columns are patched rather than rebuilt.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { offerJson } from '../src/machines/machines-offers-contract.js';
import { rangeRefuses, selectRows } from '../src/offers/filter.js';
import { OFFER_FIELDS } from '../src/offers/offer-fields.js';
import { OFFER_SEARCH_TIEBREAK, parseOfferSearch } from '../src/offers/offers-service.js';

/** The reply the reference implementation gives for a body, as JSON text. */
async function reference(app: TestApp, body: unknown): Promise<string> {
  const rows = await app.services.fleet.index.offers();
  const { q, ctx, limit } = parseOfferSearch(body, app.clock.now());
  return JSON.stringify({ offers: selectRows(rows, ctx, q, OFFER_FIELDS, limit, OFFER_SEARCH_TIEBREAK).map((o) => offerJson(o, ctx)) });
}

/** Searches through the API and checks the reply against the reference, byte for byte; returns the offers. */
async function agrees(app: TestApp, body: Record<string, unknown>): Promise<any[]> {
  const res = await app.request('POST', '/api/v0/bundles/', { body });
  assert.equal(res.status, 200, `${JSON.stringify(body)}: ${res.raw}`);
  assert.equal(res.headers['content-type'], 'application/json');
  const want = await reference(app, body);
  assert.ok(res.raw === want, `${JSON.stringify(body)} differs from the reference`);
  return res.body.offers;
}

const TYPES = ['ondemand', 'bid', 'reserved'];

forEachDialect(
  'offer search over columns',
  (app) => {
    test('every field, ordered both ways, under every search type: the reference order, byte for byte', async () => {
      for (const field of Object.keys(OFFER_FIELDS)) {
        for (const dir of ['asc', 'desc']) {
          const type = TYPES[(field.length + dir.length) % TYPES.length];
          const offers = await agrees(app(), { order: [[field, dir]], type, allocated_storage: 40, limit: 25 });
          assert.equal(offers.length, 25, field);
        }
      }
      // Several keys; the default order; limits past the number of offers.
      await agrees(app(), { order: [['gpu_name', 'asc'], ['dph_total', 'desc'], ['cpu_ram', 'asc']], limit: 1000 });
      await agrees(app(), { limit: 1000 });
      await agrees(app(), {});
    });

    test('every field filtered with each operator, values taken from real offers: the reference result', async () => {
      const all = await agrees(app(), { limit: 1000, type: 'bid', allocated_storage: 20 });
      const sample = [all[3], all[all.length - 2]];
      let nonEmpty = 0;
      for (const field of Object.keys(OFFER_FIELDS)) {
        for (const o of sample) {
          const v = o[field];
          if (v === undefined) continue;
          // Null (a missing value) compares only with eq/neq.
          const ops = typeof v === 'number' ? { gte: v } : { eq: v };
          for (const [op, value] of Object.entries({ ...ops, neq: v, in: [v, all[0][field]], notin: [v] })) {
            const found = await agrees(app(), { [field]: { [op]: value }, type: 'bid', allocated_storage: 20, order: [['score', 'asc']], limit: 1000 });
            if (found.length) nonEmpty++;
          }
          // A bound no value of the field's range passes is refused (offers-filters.test.ts), not compared.
          const range = OFFER_FIELDS[field].range;
          if (typeof v === 'number' && !(range && rangeRefuses(range, 'lt', v))) {
            await agrees(app(), { [field]: { lt: v, gt: all[0][field] - 1 }, type: 'reserved', limit: 1000 });
          }
        }
      }
      assert.ok(nonEmpty > 80, 'the filters select offers (the comparison is not between two empty lists)');
      // The benchmark query.
      const bench = { gpu_ram: { gte: 16000 }, reliability2: { gte: '0.95' }, verified: { eq: true }, dph_total: { lte: '2.5' } };
      assert.ok((await agrees(app(), { ...bench, order: [['dlperf_per_dphtotal', 'desc']], type: 'on-demand', limit: 64 })).length > 0);
      // Strings compare and order as strings; a filter nothing passes; storage larger than every disk.
      await agrees(app(), { geolocation: { gt: 'M' }, cpu_name: { lte: 'Intel' }, order: [['geolocation', 'desc']], limit: 1000 });
      // Country codes and regions match the country of a place (issue 29 item 4), in both engines alike.
      assert.ok((await agrees(app(), { geolocation: { in: ['US', 'europe', 'Quebec, CA'] }, limit: 1000 })).length > 0);
      assert.ok((await agrees(app(), { geolocation: { neq: 'us', notin: ['Asia'] }, order: [['geolocation', 'asc']], limit: 1000 })).length > 0);
      assert.ok((await agrees(app(), { geolocation: { eq: 'North_America' }, limit: 1000 })).length > 0);
      assert.deepEqual(await agrees(app(), { num_gpus: { gt: 1000 } }), []);
      // Bounds at infinity, missing values (null cluster_id), several operators on one computed field.
      assert.deepEqual(await agrees(app(), { num_gpus: { gt: '1e999' } }), []);
      assert.ok((await agrees(app(), { dph_total: { lt: '1e999', gt: '-1e999' }, num_gpus: { lte: '1e999' }, limit: 1000 })).length > 0);
      assert.ok((await agrees(app(), { cluster_id: { eq: null }, limit: 1000 })).length > 0);
      await agrees(app(), { cluster_id: { neq: null }, order: [['cluster_id', 'desc']], limit: 1000 });
      await agrees(app(), { dph_total: { gt: 0.5, lte: 3, neq: 1 }, score: { in: [0, 1] }, order: [['discounted_dph_total', 'asc']], limit: 1000 });
      assert.deepEqual(await agrees(app(), { allocated_storage: 1_000_000 }), []);
    });

    test('after rents, releases, faults, new machines and time passing, the patched columns still agree', async () => {
      const fleet = app().services.fleet;
      const db = app().store.db;
      const queries: Record<string, unknown>[] = [
        { order: [['num_gpus', 'desc'], ['machine_id', 'asc']], limit: 1000 },
        { rented: { eq: true }, type: 'bid', order: [['min_bid', 'desc']], limit: 1000 },
        { rentable: { eq: false }, limit: 1000 },
        { duration: { lt: 30 * 86_400 }, order: [['duration', 'asc']], limit: 1000 },
        { gpu_name: { eq: 'H200' }, limit: 1000 },
      ];
      const check = async () => {
        for (const q of queries) await agrees(app(), q);
      };
      await check();
      const before = await agrees(app(), { num_gpus: { gte: 2 }, order: [['id', 'asc']], limit: 1 });
      const [offer] = before;
      await db.transaction().execute((tx) => fleet.allocate(tx, { offerId: offer.id, instanceId: 900_001, kind: 'bid', bidPerGpuMicro: 5_000_000 }));
      const machine = await agrees(app(), { machine_id: { eq: offer.machine_id }, order: [['num_gpus', 'asc']], limit: 100 });
      assert.ok(machine.some((o) => o.rented), 'the bid shows as rented on its machine');
      await check();
      await db.transaction().execute((tx) => fleet.setMachineFault(tx, offer.machine_id, 'offline'));
      assert.ok((await agrees(app(), { machine_id: { eq: offer.machine_id } })).every((o) => o.rentable === false));
      await check();
      await db.transaction().execute((tx) => fleet.release(tx, 900_001));
      await db.transaction().execute((tx) => fleet.setMachineFault(tx, offer.machine_id, null));
      // A whole machine rented on demand shows no offer at all: its slots are empty, and a filter scanning a column
      // whole (an ordering, eq a number) must pass none of them.
      const [whole] = await agrees(app(), { num_gpus: { gte: 4 }, order: [['num_gpus', 'desc'], ['id', 'asc']], limit: 1 });
      await db.transaction().execute((tx) => fleet.allocate(tx, { offerId: whole.id, instanceId: 900_002, kind: 'ondemand' }));
      assert.deepEqual(await agrees(app(), { machine_id: { eq: whole.machine_id } }), []);
      for (const op of ['lte', 'lt', 'gte', 'gt']) {
        const found = await agrees(app(), { machine_id: { [op]: whole.machine_id }, order: [['machine_id', 'asc']], limit: 1000 });
        assert.ok(found.length > 0 && found.every((o) => o.machine_id !== whole.machine_id), op);
      }
      await check();
      await db.transaction().execute((tx) => fleet.release(tx, 900_002));
      assert.ok((await agrees(app(), { machine_id: { eq: whole.machine_id } })).length > 0);
      for (let k = 0; k < 3; k++) {
        const res = await app().request('POST', '/_emu/machines', { body: { gpu_name: 'H200', num_gpus: 8, duration: 3600 * (k + 1) } });
        assert.equal(res.status, 200, res.raw);
      }
      assert.equal((await agrees(app(), { gpu_name: { eq: 'H200' }, duration: { lte: 3 * 3600 }, limit: 1000 })).length, 12);
      await check();
      await app().advance(2 * 3600);
      assert.equal((await agrees(app(), { gpu_name: { eq: 'H200' }, rentable: { eq: false }, limit: 1000 })).length, 8, 'two listings ended');
      await check();
    });

    test('small limits walk a kept order (offer-order.ts): ties, offers changed since it was built, new machines', async () => {
      const fleet = app().services.fleet;
      const db = app().store.db;
      // Stored columns and computed fields that do not read the time (kept in order), ties on the first key decided by
      // the next (num_gpus, then price or machine), one that reads the time (duration: never kept), with and without
      // filters.
      const orders = [['dlperf', 'desc'], ['dph_total', 'asc'], ['score', 'desc'], ['dlperf_per_dphtotal', 'desc'], ['num_gpus', 'asc'], ['verified', 'desc'], ['duration', 'asc']];
      const second: Record<string, string[]> = { num_gpus: ['dph_total', 'desc'], verified: ['dlperf', 'asc'], dph_total: ['machine_id', 'desc'] };
      const filters = [{}, { verified: { eq: true }, dph_total: { lte: 3 } }, { num_gpus: { gte: 4 }, reliability2: { gte: 0.9 } }];
      const check = async () => {
        for (const order of orders) {
          for (const f of filters) {
            const then = second[order[0]];
            for (const limit of [1, 5, 30]) await agrees(app(), { ...f, order: then ? [order, then] : [order], type: 'on-demand', limit });
          }
        }
      };
      await check();
      // The best offers on each key rented, then released: stale slots, passing and not.
      const rented: number[] = [];
      for (const [field, dir] of orders.slice(0, 3)) {
        const [best] = await agrees(app(), { rentable: { eq: true }, order: [[field, dir]], limit: 1 });
        const instanceId = 910_000 + rented.length;
        await db.transaction().execute((tx) => fleet.allocate(tx, { offerId: best.id, instanceId, kind: 'ondemand' }));
        rented.push(instanceId);
      }
      await check();
      for (const id of rented) await db.transaction().execute((tx) => fleet.release(tx, id));
      await check();
      // A new machine, best on price: its offers exist only as changed slots until an order is rebuilt.
      const res = await app().request('POST', '/_emu/machines', { body: { gpu_name: 'H200', num_gpus: 8, price_gpu: 0.001, duration: 86_400 } });
      assert.equal(res.status, 200, res.raw);
      const [cheapest] = await agrees(app(), { order: [['dph_total', 'asc']], type: 'on-demand', limit: 1 });
      assert.equal(cheapest.machine_id, res.body.machine_id, 'the new machine is found by a kept order');
      await check();
    });
  },
  { config: { GPUPLANE_SIM_MACHINES: '120' } },
);
