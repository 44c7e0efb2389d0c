// Offer search, POST /api/v0/bundles/ (spec: Search offers; client-compat: Offer search; contract §5, §6).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { HOURS_PER_MONTH } from '../src/platform/money.js';

/** Fields the vastai client prints, and the JSON type each must have (client-compat.md). */
const PRINTED: Record<string, string> = {
  id: 'number', cuda_max_good: 'number', num_gpus: 'number', gpu_name: 'string', pcie_bw: 'number', cpu_ghz: 'number',
  cpu_cores_effective: 'number', cpu_ram: 'number', gpu_ram: 'number', disk_space: 'number', dph_total: 'number',
  dlperf: 'number', dlperf_per_dphtotal: 'number', score: 'number', driver_version: 'string', inet_up: 'number',
  inet_down: 'number', reliability: 'number', duration: 'number', machine_id: 'number', verification: 'string',
  host_id: 'number', direct_port_count: 'number', geolocation: 'string', discounted_dph_total: 'number',
  verified: 'boolean', external: 'boolean', rentable: 'boolean', rented: 'boolean',
};
const FILTERED = ('bw_nvlink compute_cap cpu_arch cpu_cores datacenter disk_bw flops_per_dphtotal gpu_arch gpu_display_active ' +
  'gpu_frac gpu_mem_bw gpu_total_ram gpu_max_power gpu_max_temp has_avx inet_down_cost inet_up_cost min_bid mobo_name ' +
  'pci_gen static_ip storage_cost total_flops ubuntu_version vms_enabled cluster_id').split(' ');

async function search(app: TestApp, body: unknown, key?: string) {
  return app.request('POST', '/api/v0/bundles/', { body, key });
}

async function addMachine(app: TestApp, body: Record<string, unknown>): Promise<{ machine_id: number; offer_ids: number[] }> {
  const res = await app.request('POST', '/_emu/machines', { body });
  assert.equal(res.status, 200, res.raw);
  return res.body;
}

const ids = (offers: { id: number }[]) => offers.map((o) => o.id).sort((a, b) => a - b);

forEachDialect('offer search', (app) => {
  /** Every offer, unfiltered (the fleet of the harness is 20 machines). */
  const everything = async () => (await search(app(), { limit: 1000 })).body.offers as any[];

  test('every offer carries every client-compat field with its JSON type; Content-Type exactly application/json', async () => {
    const res = await search(app(), { limit: 1000 });
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], 'application/json');
    assert.ok(res.body.offers.length >= 20, 'a 20-machine fleet shows at least one offer per machine');
    for (const o of res.body.offers) {
      for (const [field, type] of Object.entries(PRINTED)) assert.equal(typeof o[field], type, `${field} of offer ${o.id}`);
      for (const field of FILTERED) assert.ok(field in o, `${field} of offer ${o.id}`);
      assert.ok(o.reliability >= 0.9 && o.reliability <= 0.999);
      assert.match(o.driver_version, /^\d+\.\d+\.\d+$/);
    }
  });

  test('GET /api/v0/gpu_names/unique/ (no key) lists exactly the fleet\'s models', async () => {
    const res = await app().request('GET', '/api/v0/gpu_names/unique/', { key: null });
    assert.equal(res.status, 200);
    const names = [...new Set((await everything()).map((o) => o.gpu_name))].sort();
    assert.deepEqual([...res.body.gpu_names].sort(), names);
  });

  test('derived fields are computed: dph_total = GPUs + storage asked for; per-dollar figures; duration counts down', async () => {
    const { offer_ids } = await addMachine(app(), { gpu_name: 'RTX 4090', num_gpus: 2, price_gpu: 0.4, price_disk: 0.2, geolocation: 'Derived, ZZ' });
    const get = async (body: object) => (await search(app(), { geolocation: { eq: 'Derived, ZZ' }, order: [['num_gpus', 'asc']], ...body })).body.offers;
    const [one, two] = await get({ allocated_storage: 100 });
    assert.deepEqual([one.id, two.id], offer_ids);
    assert.ok(Math.abs(two.dph_total - (2 * 0.4 + (0.2 * 100) / HOURS_PER_MONTH)) < 1e-9);
    assert.ok(Math.abs(one.dph_total - (0.4 + (0.2 * 100) / HOURS_PER_MONTH)) < 1e-9);
    assert.ok(Math.abs(two.dlperf_per_dphtotal - two.dlperf / two.dph_total) < 1e-9);
    assert.ok(Math.abs(two.flops_per_dphtotal - two.total_flops / two.dph_total) < 1e-9);
    const [, twoDefault] = await get({});
    assert.ok(Math.abs(twoDefault.dph_total - (0.8 + (0.2 * 8) / HOURS_PER_MONTH)) < 1e-9, 'default storage is 8 GB');
    assert.equal(two.duration, 30 * 86400);
    await app().advance(3600);
    const [, later] = await get({});
    assert.equal(later.duration, 30 * 86400 - 3600);
  });

  test('each operator on a number field, values as strings, matches what the offers show', async () => {
    const all = await everything();
    const cases: [string, unknown, (n: number) => boolean][] = [
      ['eq', '2', (n) => n === 2], ['neq', '2', (n) => n !== 2], ['lt', '4', (n) => n < 4], ['lte', '4', (n) => n <= 4],
      ['gt', '1', (n) => n > 1], ['gte', 2, (n) => n >= 2], ['in', ['1', 8], (n) => n === 1 || n === 8], ['notin', ['1', '8'], (n) => n !== 1 && n !== 8],
    ];
    for (const [op, value, pred] of cases) {
      const res = await search(app(), { num_gpus: { [op]: value }, limit: 1000 });
      assert.equal(res.status, 200, `${op}: ${res.raw}`);
      assert.deepEqual(ids(res.body.offers), ids(all.filter((o) => pred(o.num_gpus))), op);
    }
  });

  test('several operators on one field must all hold', async () => {
    const all = await everything();
    const res = await search(app(), { reliability: { gt: '0.93', lt: 0.97 }, limit: 1000 });
    assert.deepEqual(ids(res.body.offers), ids(all.filter((o) => o.reliability > 0.93 && o.reliability < 0.97)));
  });

  test('booleans as true/false, "true", "True"; the client\'s default filters', async () => {
    const all = await everything();
    for (const v of [true, 'true', 'True']) {
      const res = await search(app(), { verified: { eq: v }, limit: 1000 });
      assert.deepEqual(ids(res.body.offers), ids(all.filter((o) => o.verified)));
    }
    const res = await search(app(), { verified: { eq: 'False' }, limit: 1000 });
    assert.deepEqual(ids(res.body.offers), ids(all.filter((o) => !o.verified)));
    const client = await search(app(), {
      verified: { eq: true }, external: { eq: false }, rentable: { eq: true }, rented: { eq: false },
      order: [['score', 'desc']], type: 'on-demand', allocated_storage: 5.0, disable_bundling: true, limit: 1000,
    });
    assert.equal(client.status, 200, client.raw);
    assert.deepEqual(ids(client.body.offers), ids(all.filter((o) => o.verified && !o.external && o.rentable && !o.rented)));
  });

  test('gpu_name accepts the CLI\'s underscores for spaces; in/notin take arrays', async () => {
    await addMachine(app(), { gpu_name: 'RTX 3090 Ti', num_gpus: 1 });
    const all = await everything();
    for (const name of ['RTX 3090 Ti', 'RTX_3090_Ti']) {
      const res = await search(app(), { gpu_name: { eq: name }, limit: 1000 });
      assert.ok(res.body.offers.length >= 1);
      assert.deepEqual(ids(res.body.offers), ids(all.filter((o) => o.gpu_name === 'RTX 3090 Ti')));
    }
    const res = await search(app(), { gpu_name: { notin: ['RTX_3090_Ti', 'RTX 4090'] }, limit: 1000 });
    assert.deepEqual(ids(res.body.offers), ids(all.filter((o) => o.gpu_name !== 'RTX 3090 Ti' && o.gpu_name !== 'RTX 4090')));
  });

  test('driver_version compares in the client\'s integer encoding; offers carry the string', async () => {
    const old = await addMachine(app(), { driver_version: '535.86.05', geolocation: 'Drivers, ZZ' });
    const cur = await addMachine(app(), { driver_version: '550.54.14', geolocation: 'Drivers, ZZ' });
    const q = async (f: object) => ids((await search(app(), { geolocation: { eq: 'Drivers, ZZ' }, driver_version: f })).body.offers);
    assert.deepEqual(await q({ gte: 550000000 }), cur.offer_ids);
    assert.deepEqual(await q({ lt: '550054014' }), old.offer_ids);
    assert.deepEqual(await q({ eq: 535086005 }), old.offer_ids);
    assert.deepEqual(await q({ eq: '535.86.05' }), old.offer_ids);
    const res = await search(app(), { geolocation: { eq: 'Drivers, ZZ' }, order: [['driver_version', 'desc']] });
    assert.deepEqual(res.body.offers.map((o: any) => o.driver_version), ['550.54.14', '535.86.05']);
  });

  test('order: several keys, both directions; default score descending; limit', async () => {
    const all = await everything();
    const res = await search(app(), { order: [['num_gpus', 'desc'], ['dph_total', 'asc']], limit: 1000 });
    const got = res.body.offers;
    const want = [...all].sort((a, b) => b.num_gpus - a.num_gpus || a.dph_total - b.dph_total || a.id - b.id);
    assert.deepEqual(got.map((o: any) => o.id), want.map((o) => o.id));
    const def = (await search(app(), { limit: '5' })).body.offers;
    assert.equal(def.length, 5);
    const byScore = [...all].sort((a, b) => b.score - a.score || a.id - b.id).slice(0, 5);
    assert.deepEqual(def.map((o: any) => o.id), byScore.map((o) => o.id));
  });

  test('type bid shows min_bid-based prices; reserved shows discounted_dph_total', async () => {
    await addMachine(app(), { num_gpus: 1, price_gpu: 1, min_bid: 0.3, price_disk: 0, geolocation: 'Types, ZZ' });
    const q = async (type: string) => (await search(app(), { geolocation: { eq: 'Types, ZZ' }, type })).body.offers[0];
    const ondemand = await q('ondemand');
    const bid = await q('bid');
    const reserved = await q('reserved');
    assert.equal(ondemand.dph_total, 1);
    assert.equal(bid.dph_total, 0.3);
    assert.equal(bid.min_bid, 0.3);
    assert.equal(reserved.dph_total, 1);
    assert.ok(reserved.discounted_dph_total < reserved.dph_total && reserved.discounted_dph_total > 0);
    assert.equal((await q('on-demand')).dph_total, 1);
  });

  test('strict: unknown field, unknown operator, uncoercible value are a 400 naming them', async () => {
    const cases: [unknown, RegExp][] = [
      [{ gpu_nam: { eq: 'RTX 4090' } }, /gpu_nam/],
      [{ num_gpus: { ge: 2 } }, /num_gpus\.ge/],
      [{ num_gpus: { gte: 'two' } }, /num_gpus\.gte/],
      [{ verified: { eq: 'yes' } }, /verified\.eq/],
      [{ gpu_name: { in: 'RTX 4090' } }, /gpu_name\.in/],
      [{ num_gpus: { in: [1, 'x'] } }, /num_gpus\.in\[1\]/],
      [{ driver_version: { gte: '5.x' } }, /driver_version\.gte/],
      [{ num_gpus: 2 }, /num_gpus/],
      [{ order: [['nope', 'desc']] }, /order\[0\]/],
      [{ order: [['score', 'down']] }, /order\[0\]/],
      [{ type: 'spot' }, /type/],
      [{ limit: 0 }, /limit/],
      [{ allocated_storage: 'lots' }, /allocated_storage/],
      [[1, 2], /body/],
    ];
    for (const [body, msg] of cases) {
      const res = await search(app(), body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.success, false);
      assert.equal(res.body.error, 'bad_request');
      assert.match(res.body.msg, msg);
    }
    const malformed = await app().request('POST', '/api/v0/bundles/', { body: '{"num_gpus": ' });
    assert.equal(malformed.status, 400);
  });

  test('no key is served too (issue 29 item 1: offers-anonymous.test.ts); an empty body searches everything; older clients\' GET ?q= works', async () => {
    assert.equal((await search(app(), {}, null as any)).status, 200);
    const empty = await app().request('POST', '/api/v0/bundles/');
    assert.equal(empty.status, 200);
    const q = encodeURIComponent(JSON.stringify({ num_gpus: { eq: '1' }, limit: 3 }));
    const old = await app().request('GET', `/api/v0/bundles?q=${q}`);
    assert.equal(old.status, 200, old.raw);
    assert.ok(old.body.offers.length <= 3 && old.body.offers.every((o: any) => o.num_gpus === 1));
    assert.equal((await app().request('GET', '/api/v0/bundles?q=nope')).status, 400);
  });

  test('allocated_storage larger than an offer\'s disk hides it', async () => {
    const { offer_ids } = await addMachine(app(), { num_gpus: 1, disk_space: 100, geolocation: 'Disk, ZZ' });
    const q = async (gb: number) => ids((await search(app(), { geolocation: { eq: 'Disk, ZZ' }, allocated_storage: gb })).body.offers);
    assert.deepEqual(await q(100), offer_ids);
    assert.deepEqual(await q(101), []);
  });
});
