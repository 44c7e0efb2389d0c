// Benchmark results (docs/spec/client-compat-more.md §a "Benchmarks"): `GET /api/v0/benchmarks` with the clients' query
// (`select_cols`, `select_filters` JSON, `order_by` [{col, dir}], `limit`), a bare list; empty until results are
// recorded; strict filters (400 for a malformed query).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { addMachine } from './instances-fixtures.js';

const search = (app: TestApp, query: Record<string, unknown>, key?: string) =>
  app.request('GET', '/api/v0/benchmarks', {
    key,
    query: Object.fromEntries(Object.entries(query).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)])),
  });

forEachDialect('benchmarks', (app) => {
  test('none recorded: every search is an empty bare list', async () => {
    const { api_key: key } = await app().createUser();
    const res = await search(app(), { select_cols: ['*'], select_filters: {} }, key);
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body, []);
  });

  test('recorded results: filtered as run benchmarks asks (type, gpu_name, num_gpus, last_update), ordered, limited', async () => {
    const { api_key: key } = await app().createUser();
    const a = await addMachine(app(), { gpu_name: 'RTX 4090', num_gpus: 2 });
    const b = await addMachine(app(), { gpu_name: 'RTX 3090', num_gpus: 1 });
    const now = app().clock.now();
    const record = async (body: Record<string, unknown>) => {
      const r = await app().request('POST', '/_emu/benchmarks', { body });
      assert.equal(r.status, 200, r.raw);
      return r.body.id as number;
    };
    const old = await record({ machine_id: a.machine_id, value: 10, template_hash: 'abc', last_update: now - 40 * 86_400 });
    const mid = await record({ machine_id: a.machine_id, value: 12.5, template_hash: 'abc', last_update: now - 86_400, contract_id: 7, image: 'vllm/vllm' });
    const recent = await record({ machine_id: a.machine_id, value: 11, template_hash: 'abc' });
    await record({ machine_id: a.machine_id, num_gpus: 1, value: 6, template_hash: 'abc' });
    await record({ machine_id: b.machine_id, value: 5, template_id: 3, type: 'tokens' });
    // What `vastai run benchmarks` sends: native numbers, a date bound, newest first.
    const res = await search(app(), {
      select_cols: ['*'],
      select_filters: { type: { eq: 'perf' }, gpu_name: { eq: 'RTX 4090' }, num_gpus: { eq: 2 }, last_update: { gte: now - 30 * 86_400 }, template_hash: { eq: 'abc' } },
      order_by: [{ col: 'last_update', dir: 'desc' }],
      limit: 100,
    }, key);
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body.map((r: any) => r.id), [recent, mid]);
    assert.deepEqual(res.body[1], {
      id: mid, machine_id: a.machine_id, gpu_name: 'RTX 4090', num_gpus: 2, value: 12.5, type: 'perf', template_hash: 'abc', template_id: null,
      contract_id: 7, image: 'vllm/vllm', launch_args: null, last_update: now - 86_400,
    });
    // `search benchmarks 'gpu_name=RTX_4090 score>10.5'`: strings, underscores, vast.py's old name for value.
    const typed = await search(app(), { select_cols: ['*'], select_filters: { gpu_name: { eq: 'RTX_4090' }, score: { gt: '10.5' } } }, key);
    assert.deepEqual(typed.body.map((r: any) => r.id), [mid, recent]);
    const limited = await search(app(), { select_filters: {}, order_by: [{ col: 'value', dir: 'asc' }], limit: 2 }, key);
    assert.deepEqual(limited.body.map((r: any) => r.value), [5, 6]);
    assert.equal((await search(app(), {}, key)).body.length, 5);
    assert.ok(old > 0);
  });

  test('a malformed query is a 400 naming it', async () => {
    const { api_key: key } = await app().createUser();
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ select_filters: '{broken' }, /select_filters/],
      [{ select_filters: [1] }, /select_filters/],
      [{ select_filters: { bogus: { eq: 1 } } }, /bogus/],
      [{ select_filters: { value: { gt: 'high' } } }, /value/],
      [{ select_filters: { value: { near: 1 } } }, /near/],
      [{ select_filters: { num_gpus: 2 } }, /num_gpus/],
      [{ order_by: [{ col: 'nope', dir: 'desc' }] }, /nope/],
      [{ order_by: [{ col: 'value', dir: 'sideways' }] }, /direction/],
      [{ order_by: '{}' }, /order_by/],
      [{ select_cols: ['id'] }, /select_cols/],
      [{ limit: 0 }, /limit/],
    ];
    for (const [query, msg] of cases) {
      const res = await search(app(), query, key);
      assert.equal(res.status, 400, `${JSON.stringify(query)}: ${res.raw}`);
      assert.equal(res.body.error, 'bad_request');
      assert.match(res.body.msg, msg, JSON.stringify(query));
    }
    const unknownMachine = await app().request('POST', '/_emu/benchmarks', { body: { machine_id: 999_999, value: 1 } });
    assert.equal(unknownMachine.status, 404);
    const notAdmin = await app().request('POST', '/_emu/benchmarks', { key, body: { machine_id: 1, value: 1 } });
    assert.equal(notAdmin.status, 403);
  });
});
