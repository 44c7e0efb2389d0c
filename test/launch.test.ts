// Search-and-rent and the new-style search (docs/spec/client-compat-more.md §a "Offer search, new style", §c "Launch the best
// offer"), and the queries over one's instances (§c "Instance filter values and contract lookup"): exact replies,
// strict filters (400 naming the mistake), someone else's instances never seen.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { addMachine, offerFor, rentOk, statusOf, untilRunning } from './instances-fixtures.js';

/** `q` as `vastai launch instance -g RTX_4090 -n 1 -i IMAGE -d 16` sends it (numbers as strings). */
const launchQ = (over: Record<string, unknown> = {}) => ({
  verified: { eq: true }, external: { eq: false }, rentable: { eq: true }, rented: { eq: false },
  num_gpus: { eq: '1' }, gpu_name: { eq: 'RTX 4090' }, disk_space: { gte: '16.0' },
  order: [['score', 'desc']], type: 'on-demand', limit: 3, allocated_storage: 16.0, ...over,
});

/** The whole body `vastai launch instance` sends: every key, null when not given. */
const launchBody = (q: Record<string, unknown>, over: Record<string, unknown> = {}) => ({
  image: 'pytorch/pytorch:latest', disk: 16.0, q, env: {}, label: null, extra: null, onstart: null, image_login: null,
  python_utf8: false, lang_utf8: false, use_jupyter_lab: false, jupyter_dir: null, cancel_unavail: false, template_hash_id: null,
  runtype: 'ssh_direc ssh_proxy', ...over,
});

const launch = (app: TestApp, key: string, body: unknown) => app.request('PUT', '/api/v0/launch_instance/', { key, body });

forEachDialect('launch instance and search/asks', (app) => {
  test('launch rents the best offer the query selects, through the same path as PUT /asks/{id}/', async () => {
    const { api_key: key } = await app().createUser({ credit: 100 });
    const cheap = await addMachine(app(), { gpu_name: 'RTX 4090', num_gpus: 1, price_gpu: 0.3, geolocation: 'Launch, ZZ' });
    const dear = await addMachine(app(), { gpu_name: 'RTX 4090', num_gpus: 1, price_gpu: 0.9, geolocation: 'Launch, ZZ' });
    const q = launchQ({ geolocation: { eq: 'Launch, ZZ' }, order: [['dph_total', 'asc']] });
    const res = await launch(app(), key, launchBody(q, { label: 'launched' }));
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(Object.keys(res.body).sort(), ['instance_api_key', 'new_contract', 'offer_id', 'success']);
    assert.equal(res.body.success, true);
    assert.equal(res.body.offer_id, offerFor(cheap, 1));
    const inst = await statusOf(app(), res.body.new_contract, key);
    assert.equal(inst.machine_id, cheap.machine_id);
    assert.equal(inst.label, 'launched');
    assert.equal(inst.disk_space, 16);
    assert.equal(inst.image_uuid, 'pytorch/pytorch:latest');
    assert.equal(inst.is_bid, false);
    // The cheap one is rented now: the next launch takes the other.
    const again = await launch(app(), key, launchBody(q));
    assert.equal(again.status, 200, again.raw);
    assert.equal(again.body.offer_id, offerFor(dear, 1));
    // Nothing left: 410, and nothing was rented.
    const none = await launch(app(), key, launchBody(q));
    assert.equal(none.status, 410, none.raw);
    assert.equal(none.body.error, 'offer_unavailable');
    const audit = await app().request('GET', '/api/v0/audit_logs/', { key });
    assert.equal(audit.body.filter((e: any) => e.api_route === 'PUT /api/v0/launch_instance/').length, 2);
  });

  test('launch refuses: a malformed query (400 naming it), a bid, no q, no image, no credit (402)', async () => {
    const { api_key: key } = await app().createUser({ credit: 100 });
    await addMachine(app(), { gpu_name: 'RTX 4090', num_gpus: 1, geolocation: 'Refuse, ZZ' });
    const q = launchQ({ geolocation: { eq: 'Refuse, ZZ' } });
    const cases: [unknown, RegExp][] = [
      [launchBody({ ...q, num_gpus: { eq: 'two' } }), /num_gpus/],
      [launchBody({ ...q, bogus_field: { eq: 1 } }), /bogus_field/],
      [launchBody({ ...q, reliability: { about: 1 } }), /about/],
      [launchBody({ ...q, type: 'bid' }), /on-demand/],
      [launchBody(q, { price: 0.5 }), /price/],
      [launchBody('not an object' as never), /q/],
      [{ image: 'x' }, /q/],
      [launchBody(q, { image: null }), /image/],
      [launchBody(q, { disk: -1 }), /disk/],
    ];
    for (const [body, msg] of cases) {
      const res = await launch(app(), key, body);
      assert.equal(res.status, 400, `${JSON.stringify(body).slice(0, 80)}: ${res.raw}`);
      assert.equal(res.body.error, 'bad_request');
      assert.match(res.body.msg, msg);
    }
    const { api_key: poor } = await app().createUser({ credit: 0 });
    const broke = await launch(app(), poor, launchBody(q));
    assert.equal(broke.status, 402, broke.raw);
    assert.equal(broke.body.error, 'insufficient_credit');
  });

  test('search/asks is the bundles search: the same offers, exact Content-Type, {select_cols, q}', async () => {
    const { api_key: key } = await app().createUser({ credit: 10 });
    await addMachine(app(), { gpu_name: 'RTX 3090', num_gpus: 2, geolocation: 'Asks, ZZ' });
    const q = { geolocation: { eq: 'Asks, ZZ' }, num_gpus: { gte: '1' }, order: [['num_gpus', 'desc']], type: 'on-demand', limit: 5, allocated_storage: 5.0 };
    const old = await app().request('POST', '/api/v0/bundles/', { key, body: q });
    const res = await app().request('PUT', '/api/v0/search/asks/', { key, body: { select_cols: ['*'], q } });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.headers['content-type'], 'application/json');
    assert.deepEqual(res.body, old.body);
    assert.deepEqual(res.body.offers.map((o: any) => o.num_gpus), [2, 1]);
    for (const [body, msg] of [
      [{ select_cols: ['*'], q: { num_gpus: { gte: 'x' } } }, /num_gpus/],
      [{ select_cols: ['id'], q }, /select_cols/],
      [{ select_cols: ['*'], q, extra: 1 }, /extra/],
    ] as const) {
      const bad = await app().request('PUT', '/api/v0/search/asks/', { key, body });
      assert.equal(bad.status, 400, bad.raw);
      assert.match(bad.body.msg, msg);
    }
  });

  test('instances/filters: the distinct status, verification and GPU of one\'s own live instances', async () => {
    const { api_key: key } = await app().createUser({ credit: 100 });
    const { api_key: other } = await app().createUser({ credit: 100 });
    const a = await addMachine(app(), { gpu_name: 'RTX 4090', num_gpus: 2 });
    const b = await addMachine(app(), { gpu_name: 'A100 SXM4', num_gpus: 1, verified: false });
    const i1 = await rentOk(app(), offerFor(a, 1), {}, key);
    await rentOk(app(), offerFor(a, 1), {}, key);
    const i3 = await rentOk(app(), offerFor(b, 1), {}, key);
    await rentOk(app(), offerFor(await addMachine(app(), { gpu_name: 'H100 SXM', num_gpus: 1 }), 1), {}, other);
    await untilRunning(app(), i1.id, key);
    await app().request('PUT', `/api/v0/instances/${i3.id}/`, { key, body: { state: 'stopped' } });
    const res = await app().request('GET', '/api/v0/instances/filters/', { key });
    assert.equal(res.status, 200, res.raw);
    const sort = (xs: any[]) => [...xs].sort((x, y) => JSON.stringify(x).localeCompare(JSON.stringify(y)));
    assert.deepEqual(sort(res.body.filters), sort([
      { actual_status: 'running', verification: 'verified', gpu_name: 'RTX 4090' },
      { actual_status: 'stopped', verification: 'unverified', gpu_name: 'A100 SXM4' },
    ]));
    const none = await app().request('GET', '/api/v0/instances/filters/', { key: (await app().createUser()).api_key });
    assert.deepEqual(none.body, { success: true, filters: [] });
  });

  test('contracts/fetch: one\'s contracts by label and/or ids, destroyed ones included, never another\'s', async () => {
    const { api_key: key } = await app().createUser({ credit: 100 });
    const { api_key: other } = await app().createUser({ credit: 100 });
    const m = await addMachine(app(), { num_gpus: 4 });
    const a = await rentOk(app(), offerFor(m, 1), { label: 'train' }, key);
    const b = await rentOk(app(), offerFor(m, 1), { label: 'train' }, key);
    const c = await rentOk(app(), offerFor(m, 1), { label: 'eval' }, key);
    const theirs = await rentOk(app(), offerFor(m, 1), { label: 'train' }, other);
    assert.equal((await app().request('DELETE', `/api/v0/instances/${b.id}/`, { key })).status, 200);
    const fetch = async (body: unknown) => {
      const r = await app().request('POST', '/api/v0/contracts/fetch/', { key, body });
      assert.equal(r.status, 200, r.raw);
      return r.body.contracts as any[];
    };
    assert.deepEqual((await fetch({ label: 'train' })).map((x) => x.id), [a.id, b.id]);
    assert.deepEqual((await fetch({ label: 'train', contract_ids: [b.id, c.id, theirs.id] })).map((x) => x.id), [b.id]);
    assert.deepEqual((await fetch({ contract_ids: [c.id, theirs.id, 999_999] })).map((x) => x.id), [c.id]);
    assert.deepEqual((await fetch({})).map((x) => x.id), [a.id, b.id, c.id]);
    assert.deepEqual(await fetch({ contract_ids: [] }), []);
    const destroyed = (await fetch({ contract_ids: [b.id] }))[0];
    assert.equal(destroyed.actual_status, 'destroyed');
    assert.equal(typeof destroyed.end_date, 'number');
    assert.deepEqual(Object.keys(destroyed).sort(), ['actual_status', 'end_date', 'gpu_name', 'id', 'label', 'machine_id', 'num_gpus', 'start_date']);
    for (const body of [{ label: 5 }, { contract_ids: 'x' }, { contract_ids: [0] }, { user_id: 1 }]) {
      const r = await app().request('POST', '/api/v0/contracts/fetch/', { key, body });
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.raw}`);
    }
  });
});
