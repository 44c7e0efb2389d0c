// The autoscaler's side of the client's own serverless worker (issue 33 item 5; vast-cli's vastai/serverless/server):
// what a rented worker's environment gets (MASTER_TOKEN of its own, REPORT_ADDR, WORKER_PORT unless the template
// names them), its reports at POST /worker_status/ and /delete_requests/ exactly as lib/metrics.py sends them,
// authenticated by that token, and the router following them (a worker that reports is routed once its model is
// loaded, not while loading or errored). Threat covered too: a report with another worker's token, or none, changes
// nothing (401). The real worker in a container is test/serverless-host-e2e.test.ts.
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { addMachine } from './instances-fixtures.js';
import { routable } from '../src/serverless/serverless-router.js';
import { REPORT_REWRITE_S } from '../src/serverless/serverless-workers.js';

const login = { docker_login_repo: '', docker_login_user: '', docker_login_pass: '' };

async function templateHash(app: TestApp, key: string, env: string): Promise<string> {
  const res = await app.request('POST', '/api/v0/template/', { key, body: { name: 'worker', image: 'vastai/pyworker', env, ...login } });
  assert.equal(res.status, 200, res.raw);
  return res.body.template.hash_id;
}

/** A report as the pyworker's Metrics sends it (lib/data_types.py WorkerStatusData, every field). */
function status(id: number, mtoken: string, over: Record<string, unknown> = {}) {
  return {
    id, mtoken, version: '1.1.0', loadtime: 0.0, new_load: 0.0, cur_load: 0.0, rej_load: 0.0, max_perf: 0.0, cur_perf: 0.0,
    error_msg: '', num_requests_working: 0, num_requests_recieved: 0, additional_disk_usage: 0.0, working_request_idxs: [],
    cur_capacity: 0, max_capacity: 0, url: 'http://127.0.0.1:40001', ...over,
  };
}

test('who is routed: a worker that reported ready anywhere; one that never reported only on a simulated host (no pyworker there), never on a real host', () => {
  assert.equal(routable(true, true), true);
  assert.equal(routable(true, false), true);
  assert.equal(routable(false, false), false, 'reported loading or errored');
  assert.equal(routable(false, true), false);
  assert.equal(routable(null, false), true, 'a simulated host\'s worker, never reporting');
  assert.equal(routable(undefined, false), true, 'a worker row from before 0052');
  assert.equal(routable(null, true), false, 'a real host\'s worker before its first report');
  assert.equal(routable(undefined, true), false);
});

forEachDialect('serverless workers: their environment, their reports, the router following them', (app) => {
  let owner: string;
  let endpointKey: string;
  let ep: number;
  let worker: number;
  let mtoken: string;
  const route = () => app().request('POST', '/route/', { key: endpointKey, body: { endpoint: 'reporting' } });
  const report = (body: unknown) => app().request('POST', '/worker_status/', { key: null, body });
  const listed = async () => (await app().request('POST', '/get_endpoint_workers/', { key: owner, body: { id: ep } })).body[0];

  before(async () => {
    owner = (await app().createUser({ credit: 1000 })).api_key;
    await addMachine(app(), { num_gpus: 1, geolocation: 'Report Zone', price_gpu: 0.3 });
    const hash = await templateHash(app(), owner, '-p 3000:3000 -e MODEL=tiny');
    ep = (await app().request('POST', '/api/v0/endptjobs/', { key: owner, body: { endpoint_name: 'reporting', cold_workers: 1, max_workers: 1, min_load: 1 } })).body.result;
    endpointKey = (await app().request('GET', `/api/v0/endptjobs/${ep}/`, { key: owner })).body.result.api_key;
    const wg = await app().request('POST', '/api/v0/workergroups/', { key: owner, body: { endpoint_id: ep, template_hash: hash, search_params: 'geolocation=Report_Zone num_gpus=1' } });
    assert.equal(wg.status, 200, wg.raw);
    await app().advance(1);
    await app().advance(60);
    worker = (await app().request('GET', '/api/v0/workergroups/', { key: owner })).body.results.find((w: any) => w.endpoint_id === ep).workers[0];
  });

  test('a rented worker\'s environment: its own MASTER_TOKEN (kept as a digest), REPORT_ADDR, WORKER_PORT, and its template\'s', async () => {
    const inst = (await app().request('GET', `/api/v0/instances/${worker}/`, { key: owner })).body.instances;
    assert.equal(inst.actual_status, 'running');
    const env = inst.extra_env as [string, string][] | Record<string, string>;
    const vars: Record<string, string> = Array.isArray(env) ? Object.fromEntries(env) : env;
    assert.match(vars.MASTER_TOKEN, /^gpw_[A-Za-z0-9_-]{43}$/);
    assert.equal(vars.REPORT_ADDR, app().config.publicUrl.replace(/\/+$/, ''));
    assert.equal(vars.WORKER_PORT, '3000');
    assert.equal(vars.MODEL, 'tiny', 'the template\'s own variables stay');
    mtoken = vars.MASTER_TOKEN;
    const row = await app().store.db.selectFrom('serverless_workers').selectAll().where('instance_id', '=', worker).executeTakeFirstOrThrow();
    assert.equal(row.mtoken_hash, createHash('sha256').update(mtoken).digest('hex'));
    assert.equal(row.reported_at, null);
  });

  test('a template that names WORKER_PORT or REPORT_ADDR keeps them; the token is always the autoscaler\'s', async () => {
    const user = (await app().createUser({ credit: 1000 })).api_key;
    await addMachine(app(), { num_gpus: 1, geolocation: 'Own Zone', price_gpu: 0.3 });
    const hash = await templateHash(app(), user, '-p 5000:5000 -e WORKER_PORT=5000 -e REPORT_ADDR=https://elsewhere.example -e MASTER_TOKEN=mine');
    const own = (await app().request('POST', '/api/v0/endptjobs/', { key: user, body: { endpoint_name: 'own', cold_workers: 1, max_workers: 1, min_load: 1 } })).body.result;
    assert.equal((await app().request('POST', '/api/v0/workergroups/', { key: user, body: { endpoint_id: own, template_hash: hash, search_params: 'geolocation=Own_Zone num_gpus=1' } })).status, 200);
    await app().advance(1);
    const id = (await app().request('GET', '/api/v0/workergroups/', { key: user })).body.results[0].workers[0];
    const env = (await app().request('GET', `/api/v0/instances/${id}/`, { key: user })).body.instances.extra_env;
    const vars: Record<string, string> = Array.isArray(env) ? Object.fromEntries(env) : env;
    assert.equal(vars.WORKER_PORT, '5000');
    assert.equal(vars.REPORT_ADDR, 'https://elsewhere.example');
    assert.match(vars.MASTER_TOKEN, /^gpw_/);
  });

  test('reports: loading is not routed, loaded is, an error is not; get_endpoint_workers follows them', async () => {
    assert.ok(mtoken, 'the first test read the token');
    // Never reported: routed once running (a simulated host runs no pyworker).
    assert.equal((await route()).body.status, 'ready');

    const loading = await report(status(worker, mtoken));
    assert.equal(loading.status, 200, loading.raw);
    assert.deepEqual(loading.body, { success: true, ready: false });
    const waiting = await route();
    assert.equal(waiting.body.status, 'waiting');
    assert.match(waiting.body.msg, /1 running worker\(s\) have not reported their model loaded yet/);
    assert.equal((await listed()).status, 'loading');

    const loaded = await report(status(worker, mtoken, { loadtime: 12.5, max_perf: 4200.5, cur_load: 100, cur_perf: 300 }));
    assert.deepEqual(loaded.body, { success: true, ready: true });
    assert.equal((await route()).body.status, 'ready');
    const w = await listed();
    assert.equal(w.status, 'idle');
    assert.equal(w.perf, 4200.5);
    assert.equal(w.cur_load, 100);
    // The same report again (a busy worker sends one a second): written again only after REPORT_REWRITE_S.
    const at = async () => (await app().store.db.selectFrom('serverless_workers').select('reported_at').where('instance_id', '=', worker).executeTakeFirstOrThrow()).reported_at;
    const first = await at();
    await app().advance(REPORT_REWRITE_S - 1);
    assert.deepEqual((await report(status(worker, mtoken, { loadtime: 12.5, max_perf: 4200.5, cur_load: 100, cur_perf: 300 }))).body, { success: true, ready: true });
    assert.equal(await at(), first);
    await app().advance(1);
    await report(status(worker, mtoken, { loadtime: 12.5, max_perf: 4200.5, cur_load: 100, cur_perf: 300 }));
    assert.equal(await at(), first! + REPORT_REWRITE_S);
    // The pyworker keeps sending loadtime once loaded; a report with 0 after does not unload it (its reset clears only
    // the load figures).
    assert.deepEqual((await report(status(worker, mtoken, { loadtime: 0 }))).body, { success: true, ready: true });

    const errored = await report(status(worker, mtoken, { loadtime: 12.5, error_msg: 'Healthcheck failed with status: 500' }));
    assert.deepEqual(errored.body, { success: true, ready: false });
    const refused = await route();
    assert.equal(refused.body.status, 'waiting');
    assert.equal((await listed()).status, 'error');
    const row = await app().store.db.selectFrom('serverless_workers').selectAll().where('instance_id', '=', worker).executeTakeFirstOrThrow();
    assert.equal(row.error_msg, 'Healthcheck failed with status: 500');
    assert.equal(row.reported_url, 'http://127.0.0.1:40001');

    // Recovered (a restarted worker loads again): routed again.
    assert.deepEqual((await report(status(worker, mtoken, { loadtime: 3 }))).body, { success: true, ready: true });
    assert.equal((await route()).body.status, 'ready');

    // Finished requests, as the pyworker sends them: acknowledged.
    const deleted = await app().request('POST', '/delete_requests/', {
      key: null,
      body: { worker_id: worker, mtoken, requests: [{ request_idx: 7, success: true, status: 'Success', entered_queue_at: 1.5, work_started_at: 1.6, work_completed_at: 1.9 }] },
    });
    assert.equal(deleted.status, 200, deleted.raw);
    assert.deepEqual(deleted.body, { success: true, deleted: 1 });
  });

  test('a report with another token, for another instance, or without a token is refused and changes nothing; bad bodies are 400', async () => {
    assert.ok(mtoken);
    const before = await app().store.db.selectFrom('serverless_workers').selectAll().where('instance_id', '=', worker).executeTakeFirstOrThrow();
    const unauth = { success: false, error: 'auth_error', msg: 'unknown worker, or not its MASTER_TOKEN' };
    for (const body of [
      status(worker, `${mtoken.slice(0, -1)}${mtoken.endsWith('A') ? 'B' : 'A'}`, { error_msg: 'forged' }),
      status(worker, '', { error_msg: 'forged' }),
      status(worker + 1_000_000, mtoken, { error_msg: 'forged' }),
    ]) {
      const res = await report(body);
      assert.equal(res.status, 401, res.raw);
      assert.deepEqual(res.body, unauth);
    }
    const del = await app().request('POST', '/delete_requests/', { key: null, body: { worker_id: worker, mtoken: 'gpw_nope', requests: [] } });
    assert.equal(del.status, 401);
    const after = await app().store.db.selectFrom('serverless_workers').selectAll().where('instance_id', '=', worker).executeTakeFirstOrThrow();
    assert.deepEqual(after, before);

    for (const [body, field] of [
      [{ mtoken }, /id/],
      [{ id: worker }, /mtoken/],
      [{ id: 0, mtoken }, /id/],
      [{ id: 'x', mtoken }, /id/],
      [{ id: worker, mtoken, loadtime: -1 }, /loadtime/],
      [{ id: worker, mtoken, error_msg: 5 }, /error_msg/],
    ] as const) {
      const res = await report(body);
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.raw}`);
      assert.equal(res.body.success, false);
      assert.equal(res.body.error, 'bad_request');
      assert.match(res.body.msg, field);
    }
    assert.equal((await app().request('POST', '/delete_requests/', { key: null, body: { worker_id: worker, mtoken } })).status, 400);
  });

  test('a released worker reports no more', async () => {
    assert.ok(mtoken);
    await app().store.db.updateTable('serverless_workers').set({ released_at: app().clock.now() }).where('instance_id', '=', worker).execute();
    const res = await report(status(worker, mtoken, { loadtime: 1 }));
    assert.equal(res.status, 401, res.raw);
  });
});
