// The autoscaler routes the clients post at the root (docs/spec/client-compat-more.md §e, "Related autoscaler
// routes"): /get_endpoint_workers/ (a bare list in the serverless SDK's Worker shape), /get_endpoint_logs/ and
// /get_autogroup_logs/ (the autoscaler's decisions at the levels info0, info1, trace, debug). The account key as
// Bearer, ?api_key= or the body's api_key (the serverless SDK sends no header); another user's endpoint is a 404.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { addMachine } from './instances-fixtures.js';
import { AUTOSCALE_PERIOD_S } from '../src/serverless/serverless-autoscaler.js';

async function endpointWithWorkers(app: TestApp) {
  const { api_key } = await app.createUser({ credit: 1000 });
  for (let i = 0; i < 2; i++) await addMachine(app, { num_gpus: 4, geolocation: 'Auto Zone', price_gpu: 0.5 });
  const tpl = await app.request('POST', '/api/v0/template/', { key: api_key, body: { name: 'worker', image: 'vllm/vllm-openai', docker_login_repo: '', docker_login_user: '', docker_login_pass: '' } });
  assert.equal(tpl.status, 200, tpl.raw);
  const ep = (await app.request('POST', '/api/v0/endptjobs/', {
    key: api_key, body: { endpoint_name: 'auto', min_load: 10, target_util: 0.5, cold_mult: 1, cold_workers: 1, max_workers: 4 },
  })).body.result as number;
  const wg = await app.request('POST', '/api/v0/autojobs/', {
    key: api_key, body: { endpoint_id: ep, template_hash: tpl.body.template.hash_id, search_params: 'geolocation=Auto_Zone num_gpus=1 verified=True' },
  });
  assert.equal(wg.status, 200, wg.raw);
  await app.advance(1);
  assert.equal((await app.request('POST', `/_emu/endpoints/${ep}/load`, { body: { load: 150 } })).status, 200);
  await app.advance(AUTOSCALE_PERIOD_S);
  return { key: api_key, ep, wg: wg.body.id as number };
}

forEachDialect('serverless autoscaler routes', (app) => {
  test('get_endpoint_workers: the endpoint\'s instances as Worker objects, with the key in the header, the query or the body', async () => {
    const { key, ep, wg } = await endpointWithWorkers(app());
    const group = (await app().request('GET', '/api/v0/autojobs/', { key, body: {} })).body.results.find((w: any) => w.id === wg);
    assert.equal(group.workers.length, 3, 'load 150 at 50 a worker');
    const bodyKey = await app().request('POST', '/get_endpoint_workers/', { key: null, body: { id: ep, api_key: key } });
    assert.equal(bodyKey.status, 200, bodyKey.raw);
    assert.ok(Array.isArray(bodyKey.body));
    assert.deepEqual(bodyKey.body.map((w: any) => w.id), [...group.workers].sort((a: number, b: number) => a - b));
    for (const w of bodyKey.body) {
      const inst = (await app().request('GET', `/api/v0/instances/${w.id}/`, { key })).body.instances;
      assert.equal(w.status, inst.actual_status ?? 'loading');
      assert.equal(typeof w.started_at, 'number');
      for (const f of ['cur_load', 'new_load', 'cur_load_rolling_avg', 'cur_perf', 'perf', 'measured_perf', 'dlperf', 'reliability', 'disk_usage', 'loaded_at']) {
        assert.equal(typeof w[f], 'number', f);
      }
      assert.equal(w.reqs_working, 0);
    }
    assert.deepEqual((await app().request('POST', '/get_endpoint_workers/', { key, body: { id: ep } })).body, bodyKey.body, 'Bearer');
    assert.deepEqual((await app().request('POST', `/get_endpoint_workers/?api_key=${key}`, { key: null, body: { id: ep } })).body, bodyKey.body, '?api_key=');

    const none = await app().request('POST', '/get_endpoint_workers/', { key: null, body: { id: ep } });
    assert.equal(none.status, 401);
    assert.equal(none.body.error, 'auth_error');
    const wrong = await app().request('POST', '/get_endpoint_workers/', { key: null, body: { id: ep, api_key: 'gpk_not_a_key_0000000000000000' } });
    assert.equal(wrong.status, 401);
    const other = await app().createUser();
    const foreign = await app().request('POST', '/get_endpoint_workers/', { key: null, body: { id: ep, api_key: other.api_key } });
    assert.equal(foreign.status, 404);
    assert.equal(foreign.body.error, 'not_found');
    for (const body of [{ id: 'x', api_key: key }, { api_key: key }, { id: ep, api_key: key, extra: 1 }, { id: 0, api_key: key }]) {
      const bad = await app().request('POST', '/get_endpoint_workers/', { key: null, body });
      assert.equal(bad.status, 400, JSON.stringify(body));
      assert.equal(bad.body.error, 'bad_request');
    }
  });

  test('get_endpoint_logs / get_autogroup_logs: the decisions, oldest first, one line each, more detail at each level; tail', async () => {
    const { key, ep, wg } = await endpointWithWorkers(app());
    const decisions = (await app().request('GET', `/api/v0/autojobs/${wg}/decisions/`, { key })).body.decisions.reverse();
    assert.ok(decisions.length >= 2);
    const logs = await app().request('POST', '/get_endpoint_logs/', { key, body: { id: ep, api_key: key } });
    assert.equal(logs.status, 200, logs.raw);
    const levels = ['info0', 'info1', 'trace', 'debug'].map((l) => (logs.body[l] as string).split('\n'));
    for (const lines of levels) assert.equal(lines.length, decisions.length);
    decisions.forEach((d: any, i: number) => {
      const at = new Date(d.at * 1000).toISOString();
      assert.equal(levels[0][i], `${at} workergroup ${wg}: ${d.action}`);
      assert.equal(levels[1][i], `${levels[0][i]} (${d.workers_before} -> ${d.target} workers): ${d.reason}`);
      assert.equal(levels[2][i], `${levels[1][i]}; instances ${JSON.stringify(d.instances)}`);
      assert.equal(levels[3][i], `${levels[2][i]}; load ${d.load}`);
    });
    const group = await app().request('POST', '/get_autogroup_logs/', { key, body: { id: wg, api_key: key, tail: 1 } });
    assert.equal(group.status, 200, group.raw);
    assert.equal(group.body.info1, levels[1].at(-1), 'tail 1: the newest line');
    const other = await app().createUser();
    assert.equal((await app().request('POST', '/get_autogroup_logs/', { key: other.api_key, body: { id: wg } })).status, 404);
    assert.equal((await app().request('POST', '/get_endpoint_logs/', { key: other.api_key, body: { id: ep } })).status, 404);
    assert.equal((await app().request('POST', '/get_endpoint_logs/', { key, body: { id: ep, tail: 0 } })).status, 400);
  });
});
