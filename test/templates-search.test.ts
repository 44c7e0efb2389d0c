// Template search (spec: Templates Search operators; additional search fields; contract §5 coercion;
// client-compat: GET /api/v0/template/?select_cols=["*"]&select_filters=<URL-encoded JSON>).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, T0 } from './helpers/harness.js';

const base = { docker_login_repo: '', docker_login_user: '', docker_login_pass: '', private: false };

forEachDialect('templates search', (app) => {
  let ids: Record<string, number> = {};
  let meId = 0;
  let otherKey = '';

  before(async () => {
    const specs = [
      { name: 's-small', image: 'img/a', recommended_disk_space: '4', runtype: 'ssh', ssh_direct: true, tag: 'v1' },
      { name: 's-mid', image: 'img/b', recommended_disk_space: 8, runtype: 'jupyter', jup_direct: true },
      { name: 's-big', image: 'img/c', recommended_disk_space: '50.5', runtype: 'args', tag: 'v2' },
    ];
    for (const [i, s] of specs.entries()) {
      app().clock.set(T0 + 100 * (i + 1));
      const res = await app().request('POST', '/api/v0/template/', { body: { ...base, ...s } });
      assert.equal(res.status, 200, res.raw);
      ids[s.name] = res.body.template.id;
    }
    meId = (await app().request('GET', '/api/v0/users/current')).body.id;
    otherKey = (await app().createUser()).api_key;
  });

  const names = async (filters: unknown, key?: string) => {
    const url = `/api/v0/template/?select_cols=${encodeURIComponent('["*"]')}&select_filters=${encodeURIComponent(JSON.stringify(filters))}`;
    const res = await app().request('GET', url, { key });
    assert.equal(res.status, 200, res.raw);
    assert.ok(Array.isArray(res.body.templates));
    return res.body.templates.map((t: any) => t.name).filter((n: string) => n.startsWith('s-')).sort();
  };

  test('every operator, with numbers sent as strings', async () => {
    assert.deepEqual(await names({ recommended_disk_space: { eq: '8' } }), ['s-mid']);
    assert.deepEqual(await names({ recommended_disk_space: { neq: '8' } }), ['s-big', 's-small']);
    assert.deepEqual(await names({ recommended_disk_space: { lt: '8' } }), ['s-small']);
    assert.deepEqual(await names({ recommended_disk_space: { lte: '8' } }), ['s-mid', 's-small']);
    assert.deepEqual(await names({ recommended_disk_space: { gt: '8' } }), ['s-big']);
    assert.deepEqual(await names({ recommended_disk_space: { gte: 8 } }), ['s-big', 's-mid']);
    assert.deepEqual(await names({ runtype: { in: ['ssh', 'args'] } }), ['s-big', 's-small']);
    assert.deepEqual(await names({ runtype: { notin: ['ssh', 'args'] } }), ['s-mid']);
    assert.deepEqual(await names({ id: { in: [String(ids['s-small']), ids['s-big']] } }), ['s-big', 's-small']);
  });

  test('several operators on one field must all hold; several fields too', async () => {
    assert.deepEqual(await names({ recommended_disk_space: { gt: '4', lt: '50' } }), ['s-mid']);
    assert.deepEqual(await names({ tag: { eq: 'latest' }, runtype: { eq: 'jupyter' } }), ['s-mid']);
  });

  test('booleans coerce from "true"/"false"/1/0; empty in matches nothing, empty notin excludes nothing', async () => {
    assert.deepEqual(await names({ ssh_direct: { eq: 'true' } }), ['s-small']);
    assert.deepEqual(await names({ jup_direct: { eq: 1 } }), ['s-mid']);
    assert.deepEqual(await names({ ssh_direct: { eq: false }, jup_direct: { eq: 'False' } }), ['s-big']);
    assert.deepEqual(await names({ name: { in: [] } }), []);
    assert.deepEqual(await names({ name: { notin: [] } }), ['s-big', 's-mid', 's-small']);
  });

  test('the additional search fields: creator_id, created_at, count_created, default_tag, recent_create_date, recommended', async () => {
    assert.deepEqual(await names({ creator_id: { eq: String(meId) } }), ['s-big', 's-mid', 's-small']);
    assert.deepEqual(await names({ creator_id: { neq: meId } }), []);
    assert.deepEqual(await names({ created_at: { gte: String(T0 + 200) } }), ['s-big', 's-mid']);
    assert.deepEqual(await names({ count_created: { eq: '0' } }), ['s-big', 's-mid', 's-small']);
    assert.deepEqual(await names({ default_tag: { eq: 'v2' } }), ['s-big']);
    assert.deepEqual(await names({ recent_create_date: { eq: null } }), ['s-big', 's-mid', 's-small']);
    assert.deepEqual(await names({ recommended: { eq: false } }), ['s-big', 's-mid', 's-small']);
    assert.deepEqual(await names({ recommended: { eq: true } }), []);
  });

  test('another user finds public templates the same way', async () => {
    assert.deepEqual(await names({ creator_id: { eq: meId } }, otherKey), ['s-big', 's-mid', 's-small']);
  });

  test('no filter lists visible templates; each has at least hash_id and name', async () => {
    const res = await app().request('GET', '/api/v0/template/');
    assert.equal(res.status, 200);
    assert.ok(res.body.templates.length >= 3);
    for (const t of res.body.templates) {
      assert.equal(typeof t.hash_id, 'string');
      assert.equal(typeof t.name, 'string');
    }
  });

  test('unknown field, unknown operator, bad value, bad JSON: 400 naming the culprit; never a 500', async () => {
    const cases: Array<[string, RegExp]> = [
      [JSON.stringify({ colour: { eq: 'red' } }), /colour/],
      [JSON.stringify({ name: { like: 'x' } }), /like/],
      [JSON.stringify({ recommended_disk_space: { gt: 'big' } }), /recommended_disk_space/],
      [JSON.stringify({ ssh_direct: { eq: 'maybe' } }), /ssh_direct/],
      [JSON.stringify({ name: { in: 'x' } }), /name/],
      [JSON.stringify({ name: 'x' }), /name/],
      [JSON.stringify({ name: { gt: null } }), /name/],
      [JSON.stringify({ extra_filters: { eq: '{}' } }), /extra_filters/],
      [JSON.stringify([1, 2]), /select_filters/],
      ['{not json', /select_filters/],
    ];
    for (const [raw, re] of cases) {
      const res = await app().request('GET', `/api/v0/template/?select_filters=${encodeURIComponent(raw)}`);
      assert.equal(res.status, 400, `${raw} → ${res.raw}`);
      assert.equal(res.body.error, 'bad_request');
      assert.match(res.body.msg, re);
    }
  });

  test('out-of-range numbers on integer fields are plain comparisons, not database errors', async () => {
    assert.deepEqual(await names({ id: { eq: '1e20' } }), []);
    assert.deepEqual(await names({ id: { lt: 1.5e20 } }), ['s-big', 's-mid', 's-small']);
    assert.deepEqual(await names({ count_created: { eq: 0.5 } }), []);
  });
});
