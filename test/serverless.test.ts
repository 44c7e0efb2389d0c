// Serverless (spec: Create serverless endpoint; client-compat: Serverless; contract §3): endpoints with the spec's
// defaults, workergroups, and the simulated autoscaler renting real instances, driven by the virtual clock.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { addMachine } from './instances-fixtures.js';
import { AUTOSCALE_PERIOD_S } from '../src/serverless/serverless-autoscaler.js';

const login = { docker_login_repo: '', docker_login_user: '', docker_login_pass: '' };
/** What the vastai client sends to create an endpoint when the user gives nothing: every key, null. */
const CLIENT_ENDPOINT = {
  client_id: 'me', min_load: null, min_cold_load: null, target_util: null, cold_mult: null, cold_workers: null, max_workers: null,
  endpoint_name: null, max_queue_time: null, target_queue_time: null, inactivity_timeout: null, autoscaler_instance: 'prod',
};

async function templateHash(app: TestApp, key: string): Promise<string> {
  const res = await app.request('POST', '/api/v0/template/', { key, body: { name: 'worker', image: 'vllm/vllm-openai', ...login } });
  assert.equal(res.status, 200, res.raw);
  return res.body.template.hash_id;
}

async function workergroup(app: TestApp, key: string, id: number) {
  const res = await app.request('GET', '/api/v0/autojobs/', { key, body: {} });
  assert.equal(res.status, 200, res.raw);
  return res.body.results.find((w: any) => w.id === id);
}

async function decisions(app: TestApp, key: string, id: number) {
  const res = await app.request('GET', `/api/v0/autojobs/${id}/decisions/`, { key });
  assert.equal(res.status, 200, res.raw);
  return res.body.decisions as any[];
}

forEachDialect('serverless endpoints', (app) => {
  test('create with the client\'s null body takes the spec defaults; list, update, delete', async () => {
    const { api_key } = await app().createUser();
    const res = await app().request('POST', '/api/v0/endptjobs/', { key: api_key, body: CLIENT_ENDPOINT });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.success, true);
    assert.equal(typeof res.body.result, 'number');
    const list = await app().request('GET', '/api/v0/endptjobs/', { key: api_key, body: { client_id: 'me' } });
    assert.equal(list.status, 200, list.raw);
    assert.equal(list.body.success, true);
    const [e] = list.body.results;
    assert.deepEqual(
      { id: e.id, min_load: e.min_load, target_util: e.target_util, cold_mult: e.cold_mult, cold_workers: e.cold_workers, max_workers: e.max_workers, endpoint_name: e.endpoint_name },
      { id: res.body.result, min_load: 10, target_util: 0.9, cold_mult: 2.5, cold_workers: 5, max_workers: 20, endpoint_name: 'default-endpoint' },
    );
    const upd = await app().request('PUT', `/api/v0/endptjobs/${e.id}/`, { key: api_key, body: { max_workers: 8, target_util: null } });
    assert.equal(upd.status, 200, upd.raw);
    const after = (await app().request('GET', '/api/v0/endptjobs/', { key: api_key })).body.results[0];
    assert.equal(after.max_workers, 8);
    assert.equal(after.target_util, 0.9, 'null leaves a setting as it was');
    for (const body of [{ target_util: 1.5 }, { cold_workers: 9 }, { max_workers: 0 }]) {
      const bad = await app().request('PUT', `/api/v0/endptjobs/${e.id}/`, { key: api_key, body });
      assert.equal(bad.status, 400, JSON.stringify(body));
      assert.equal(bad.body.error, 'bad_request');
    }
    const { api_key: other } = await app().createUser();
    assert.equal((await app().request('DELETE', `/api/v0/endptjobs/${e.id}/`, { key: other })).status, 404);
    assert.deepEqual((await app().request('GET', '/api/v0/endptjobs/', { key: other })).body.results, []);
    assert.equal((await app().request('DELETE', `/api/v0/endptjobs/${e.id}/`, { key: api_key })).status, 200);
    assert.deepEqual((await app().request('GET', '/api/v0/endptjobs/', { key: api_key })).body.results, []);
  });

  test('workergroup creation checks the template, the endpoint and the search query strictly', async () => {
    const { api_key } = await app().createUser();
    const hash = await templateHash(app(), api_key);
    const ep = (await app().request('POST', '/api/v0/endptjobs/', { key: api_key, body: { endpoint_name: 'checks' } })).body.result;
    const base = { template_hash: hash, endpoint_id: ep, search_params: 'verified=True gpu_name=RTX_4090', min_load: null, cold_workers: 0 };
    const cases: [Record<string, unknown>, number][] = [
      [{ search_params: 'no_such_field=3' }, 400],
      [{ search_params: 'num_gpus>=lots' }, 400],
      [{ search_params: 'gpu_name' }, 400],
      [{ template_hash: 'nope' }, 404],
      [{ template_hash: null, template_id: 3 }, 400],
      [{ endpoint_id: ep + 999 }, 404],
      [{ target_util: 0 }, 400],
    ];
    for (const [patch, status] of cases) {
      const res = await app().request('POST', '/api/v0/autojobs/', { key: api_key, body: { ...base, ...patch } });
      assert.equal(res.status, status, `${JSON.stringify(patch)}: ${res.raw}`);
    }
    const byName = await app().request('POST', '/api/v0/autojobs/', { key: api_key, body: { ...base, endpoint_id: null, endpoint_name: 'checks' } });
    assert.equal(byName.status, 200, byName.raw);
    const wg = await workergroup(app(), api_key, byName.body.id);
    assert.deepEqual(wg.search_query, { verified: { eq: true }, gpu_name: { eq: 'RTX 4090' } });
    assert.equal(wg.endpoint_id, ep);

    // Updates: one field alone (the CLI's `update workergroup --test_workers`), and a body naming nothing to change.
    const id = byName.body.id;
    const tw = await app().request('PUT', `/api/v0/autojobs/${id}/`, { key: api_key, body: { test_workers: 2 } });
    assert.equal(tw.status, 200, tw.raw);
    assert.equal((await workergroup(app(), api_key, id)).test_workers, 2);
    const nothing = await app().request('PUT', `/api/v0/autojobs/${id}/`, { key: api_key, body: {} });
    assert.equal(nothing.status, 200, nothing.raw);
    const bad = await app().request('PUT', `/api/v0/autojobs/${id}/`, { key: api_key, body: { search_params: 'no_such_field=1' } });
    assert.equal(bad.status, 400, bad.raw);
  });

  test('autoscaler: scales up on load, caps at max_workers, scales down, and deleting the endpoint releases workers', async () => {
    const { api_key } = await app().createUser({ credit: 1000 });
    for (let i = 0; i < 3; i++) await addMachine(app(), { num_gpus: 4, geolocation: 'SLS Zone', price_gpu: 0.5 });
    const hash = await templateHash(app(), api_key);
    const ep = (await app().request('POST', '/api/v0/endptjobs/', {
      key: api_key, body: { endpoint_name: 'scale', min_load: 10, target_util: 0.5, cold_mult: 1, cold_workers: 1, max_workers: 6 },
    })).body.result;
    const created = await app().request('POST', '/api/v0/autojobs/', {
      key: api_key, body: { endpoint_id: ep, template_hash: hash, search_params: 'geolocation=SLS_Zone num_gpus=1 verified=True' },
    });
    assert.equal(created.status, 200, created.raw);
    const wg = created.body.id;
    const setLoad = async (load: number) => assert.equal((await app().request('POST', `/_emu/endpoints/${ep}/load`, { body: { load } })).status, 200);

    // No load: min_load 10 at target_util 0.5 needs one worker, and cold_workers keeps one.
    await app().advance(1);
    let w = await workergroup(app(), api_key, wg);
    assert.equal(w.workers.length, 1);
    let [last] = await decisions(app(), api_key, wg);
    assert.equal(last.action, 'scale_up');
    assert.equal(last.target, 1);
    assert.match(last.reason, /below min_load 10/);
    const inst = await app().request('GET', `/api/v0/instances/${w.workers[0]}/`, { key: api_key });
    assert.equal(inst.status, 200, 'a worker is a real instance of the owner');
    assert.equal(inst.body.instances.template_hash_id, hash);

    // Load 250 at 50 per worker (100 × 0.5): five workers.
    await setLoad(250);
    await app().advance(AUTOSCALE_PERIOD_S);
    w = await workergroup(app(), api_key, wg);
    assert.equal(w.workers.length, 5);
    [last] = await decisions(app(), api_key, wg);
    assert.equal(last.action, 'scale_up');
    assert.equal(last.workers_before, 1);
    assert.equal(last.instances.length, 4);

    // Far more load than six workers serve: capped at max_workers.
    await setLoad(5000);
    await app().advance(AUTOSCALE_PERIOD_S);
    w = await workergroup(app(), api_key, wg);
    assert.equal(w.workers.length, 6);
    [last] = await decisions(app(), api_key, wg);
    assert.match(last.reason, /capped at max_workers 6/);

    // Steady load: the next run holds.
    await app().advance(AUTOSCALE_PERIOD_S);
    [last] = await decisions(app(), api_key, wg);
    assert.equal(last.action, 'hold');

    // Load gone: back to one worker; the newest ones are destroyed.
    const before = w.workers as number[];
    await setLoad(0);
    await app().advance(AUTOSCALE_PERIOD_S);
    w = await workergroup(app(), api_key, wg);
    assert.deepEqual(w.workers, [before[0]]);
    [last] = await decisions(app(), api_key, wg);
    assert.equal(last.action, 'scale_down');
    assert.deepEqual([...last.instances].sort((a, b) => a - b), before.slice(1));
    for (const id of before.slice(1)) assert.equal((await app().request('GET', `/api/v0/instances/${id}/`, { key: api_key })).body.instances, null);

    // Workers' charges are serverless, grouped under the endpoint and workergroup in the tree format.
    const now = Math.floor(app().clock.now());
    const tree = await app().request('GET', '/api/v0/charges/', {
      key: api_key, query: { select_filters: JSON.stringify({ day: { gte: 0, lte: now + 86_400 } }), format: 'tree' },
    });
    assert.equal(tree.status, 200, tree.raw);
    const top = tree.body.results.find((r: any) => r.source === `endpoint-${ep}`);
    assert.ok(top, tree.raw);
    assert.equal(top.type, 'serverless');
    assert.ok(top.items.some((i: any) => i.source === `workergroup-${wg}`), JSON.stringify(top.items));

    // Deleting the endpoint releases the last worker at once.
    assert.equal((await app().request('DELETE', `/api/v0/endptjobs/${ep}/`, { key: api_key })).status, 200);
    assert.equal((await app().request('GET', `/api/v0/instances/${before[0]}/`, { key: api_key })).body.instances, null);
    assert.equal(await workergroup(app(), api_key, wg), undefined);
    await app().advance(AUTOSCALE_PERIOD_S * 3);
    const live = await app().request('GET', '/api/v0/instances?owner=me', { key: api_key });
    assert.deepEqual(live.body.instances, [], 'no autoscaler runs after the delete');
  });
});
