// Lists and shows in every form client-compat.md names: /api/v0/instances/, paginated /api/v1/instances/, show.
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { addMachine, BOOT_MAX_S, offerFor, rentOk } from './instances-fixtures.js';

/** Fields the vastai client prints, and whether they must be numbers (client-compat: Instances). */
const NUMERIC = ['gpu_util', 'cpu_cores_effective', 'cpu_ram', 'disk_space', 'dph_total', 'inet_up', 'inet_down', 'reliability2', 'uptime_mins', 'start_date'];
const PRESENT = ['id', 'machine_id', 'actual_status', 'num_gpus', 'gpu_name', 'ssh_host', 'ssh_port', 'image_uuid', 'label', 'intended_status', 'status_msg', 'ports', 'public_ipaddr', 'image_runtype', 'extra_env'];

forEachDialect('instances: lists', (app) => {
  // Read by every test, changed by none (the one that destroys has a user of its own), so each runs alone too.
  let user: { api_key: string };
  const ids: number[] = [];
  before(async () => {
    user = await app().createUser({ credit: 1000 });
    const m = await addMachine(app(), { num_gpus: 8 });
    for (let i = 0; i < 5; i++) ids.push((await rentOk(app(), offerFor(m, 1), { label: `job-${4 - i}` }, user.api_key)).id);
    await app().advance(BOOT_MAX_S);
  });

  test('GET /api/v0/instances/ → {instances_found, instances}, only the caller\'s, every client field typed', async () => {
    const res = await app().request('GET', '/api/v0/instances/?owner=me', { key: user.api_key });
    assert.equal(res.status, 200);
    assert.equal(res.body.instances_found, 5);
    assert.deepEqual(res.body.instances.map((i: any) => i.id), ids);
    for (const inst of res.body.instances) {
      for (const f of PRESENT) assert.ok(f in inst, `field ${f}`);
      for (const f of NUMERIC) assert.equal(typeof inst[f], 'number', `field ${f} must be a number`);
      assert.ok(Array.isArray(inst.extra_env));
    }
    const owner = await app().request('GET', '/api/v0/instances');
    assert.ok(!owner.body.instances.some((i: any) => ids.includes(i.id)), 'another user sees none of them');
  });

  test('a user without instances gets instances_found 0 and an empty list', async () => {
    const { api_key } = await app().createUser();
    const res = await app().request('GET', '/api/v0/instances/', { key: api_key });
    assert.deepEqual(res.body, { instances_found: 0, instances: [] });
  });

  test('show: {instances: {...}} with start_date and extra_env', async () => {
    const res = await app().request('GET', `/api/v0/instances/${ids[0]}/?owner=me`, { key: user.api_key });
    assert.equal(res.status, 200);
    assert.equal(res.body.instances.id, ids[0]);
    assert.equal(typeof res.body.instances.start_date, 'number');
    assert.deepEqual(res.body.instances.extra_env, []);
  });

  test('v1: pages of `limit` follow after_token until next_token is null, each instance once', async () => {
    const seen: number[] = [];
    let token: string | null = null;
    let pages = 0;
    do {
      const q = new URLSearchParams({ select_filters: '{}', order_by: '[{"col":"id","dir":"asc"}]', limit: '2' });
      if (token) q.set('after_token', token);
      const res = await app().request('GET', `/api/v1/instances/?${q}`, { key: user.api_key });
      assert.equal(res.status, 200, res.raw);
      assert.equal(res.body.total_instances, 5);
      seen.push(...res.body.instances.map((i: any) => i.id));
      token = res.body.next_token;
      pages++;
    } while (token);
    assert.equal(pages, 3);
    assert.deepEqual(seen, ids);
  });

  test('v1: a page boundary stays put when an earlier instance is destroyed between pages', async () => {
    const own = await app().createUser({ credit: 1000 });
    const m = await addMachine(app(), { num_gpus: 4 });
    const mine: number[] = [];
    for (let i = 0; i < 3; i++) mine.push((await rentOk(app(), offerFor(m, 1), {}, own.api_key)).id);
    const first = await app().request('GET', '/api/v1/instances/?limit=2', { key: own.api_key });
    assert.deepEqual(first.body.instances.map((i: any) => i.id), mine.slice(0, 2));
    const extra = await rentOk(app(), offerFor(m, 1), {}, own.api_key);
    await app().request('DELETE', `/api/v0/instances/${first.body.instances[0].id}/`, { key: own.api_key });
    const second = await app().request('GET', `/api/v1/instances/?limit=10&after_token=${first.body.next_token}`, { key: own.api_key });
    assert.deepEqual(second.body.instances.map((i: any) => i.id), [...mine.slice(2), extra.id]);
    assert.equal(second.body.next_token, null);
  });

  test('v1: order_by label desc and select_filters (numbers as strings, in)', async () => {
    const q = new URLSearchParams({ order_by: '[{"col":"label","dir":"asc"}]', select_filters: JSON.stringify({ num_gpus: { eq: '1' }, actual_status: { in: ['running'] } }) });
    const res = await app().request('GET', `/api/v1/instances/?${q}`, { key: user.api_key });
    assert.equal(res.status, 200, res.raw);
    const labels = res.body.instances.map((i: any) => i.label);
    assert.deepEqual(labels, [...labels].sort());
    assert.equal(res.body.total_instances, ids.length);
    const none = await app().request('GET', `/api/v1/instances/?select_filters=${encodeURIComponent('{"label":{"eq":"nope"}}')}`, { key: user.api_key });
    assert.equal(none.body.total_instances, 0);
    assert.equal(none.body.next_token, null);
  });

  test('v1: malformed select_filters, order_by or after_token are 400', async () => {
    for (const q of ['select_filters=%7Bnope', 'order_by=%5B%7B%22col%22%3A%22id%22%2C%22dir%22%3A%22up%22%7D%5D', 'after_token=%%%', 'select_filters=%7B%22id%22%3A%7B%22like%22%3A1%7D%7D', 'limit=0']) {
      const res = await app().request('GET', `/api/v1/instances/?${q}`, { key: user.api_key });
      assert.equal(res.status, 400, `${q}: ${res.raw}`);
      assert.equal(res.body.error, 'bad_request');
    }
  });
});
