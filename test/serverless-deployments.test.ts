// Deployments (docs/spec/client-compat-more.md §e "Deployments"): PUT /api/v0/deployments/ as the serverless SDK
// sends it (created, exists, autoscale_update, soft_update with a new version), the records and versions vastai
// shows, the upload form of the blob store (signed with AWS Signature Version 4), the workers the autoscaler runs
// for the current version, the ttl, another user's deployments refused, bad input 400s; and without a blob store, a
// clear 503 that names GPUPLANE_BLOB_STORE_URL.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { addMachine } from './instances-fixtures.js';
import { signingKey } from '../src/serverless/serverless-blob.js';
import { MAX_DEPLOYMENT_VERSIONS } from '../src/serverless/serverless-deployments.js';

const ACCESS = 'AKIDEXAMPLE';
const SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';
const BLOB = `https://${ACCESS}:${encodeURIComponent(SECRET)}@s3.example.test/tarballs?region=eu-west-1`;

/** What the SDK's Deployment sends for a small deployment (DeploymentConfig.to_dict: the non-null fields). */
const config = (patch: Record<string, unknown> = {}) => ({
  name: 'square', image: 'vastai/base-image:latest', file_hash: 'a1b2c3d4e5f6', file_size: 2048,
  env: '-p 3000:3000/tcp -e REPORT_ADDR=http://127.0.0.1:9', tag: 'default', search_params: 'geolocation=Deploy_Zone num_gpus=1',
  storage: 20, cold_workers: 1, max_workers: 2, min_load: 1, ...patch,
});

/** The fields vastai's `show deployment` prints and the SDK's DeploymentData requires. */
const DETAIL_KEYS = ['id', 'name', 'tag', 'image', 'endpoint_id', 'endpoint_state', 'worker_count', 'file_hash', 's3_key', 'current_version_id',
  'last_healthy_version_id', 'storage', 'ttl', 'created_at', 'updated_at'];

async function put(app: TestApp, key: string, body: Record<string, unknown>) {
  return app.request('PUT', '/api/v0/deployments/', { key, query: { api_key: key }, body });
}

forEachDialect('deployments without a blob store', (app) => {
  test('creating one is a 503 naming GPUPLANE_BLOB_STORE_URL; nothing is made; lists are empty', async () => {
    const { api_key } = await app().createUser();
    const res = await put(app(), api_key, config());
    assert.equal(res.status, 503, res.raw);
    assert.deepEqual(res.body, {
      success: false, error: 'service_unavailable',
      msg: 'this server has no blob store for deployment tarballs: set GPUPLANE_BLOB_STORE_URL (an S3-compatible bucket) to create deployments or change their code',
    });
    for (const url of ['/api/v0/deployments', '/api/v0/deployments/']) {
      const list = await app().request('GET', url, { key: api_key });
      assert.equal(list.status, 200, list.raw);
      assert.deepEqual(list.body, { success: true, deployments: [] });
    }
    assert.deepEqual((await app().request('GET', '/api/v0/endptjobs/', { key: api_key })).body.results, [], 'no endpoint was left behind');
  });
});

forEachDialect('deployments with a blob store', (app) => {
  /**
   * A new user's deployment of config(), just created, and a machine its search finds. Each test makes its own, so
   * none depends on what an earlier one left (any one runs alone).
   */
  async function deployed(): Promise<{ owner: string; dep: any; now: number }> {
    const owner = (await app().createUser({ credit: 1000 })).api_key;
    await addMachine(app(), { num_gpus: 4, geolocation: 'Deploy Zone', price_gpu: 0.2 });
    const now = app().clock.now();
    const res = await put(app(), owner, config());
    assert.equal(res.status, 200, res.raw);
    return { owner, dep: res.body, now };
  }

  test('created: its endpoint, workergroup and first version, and a signed upload form for the tarball', async () => {
    const { owner, dep, now } = await deployed();
    assert.deepEqual(Object.keys(dep).sort(), ['action', 'deployment_id', 'endpoint_id', 'evicted_versions', 'success', 'upload_fields', 'upload_url', 'version_id', 'workergroup_id']);
    assert.equal(dep.action, 'created');
    assert.deepEqual(dep.evicted_versions, []);
    assert.equal(dep.upload_url, 'https://s3.example.test/tarballs/');
    const f = dep.upload_fields;
    const date = new Date(Math.floor(now) * 1000).toISOString().slice(0, 10).replace(/-/g, '');
    assert.deepEqual(Object.keys(f).sort(), ['key', 'policy', 'x-amz-algorithm', 'x-amz-credential', 'x-amz-date', 'x-amz-signature']);
    assert.equal(f.key, `deployments/${dep.deployment_id}/a1b2c3d4e5f6.tar.gz`);
    assert.equal(f['x-amz-algorithm'], 'AWS4-HMAC-SHA256');
    assert.equal(f['x-amz-credential'], `${ACCESS}/${date}/eu-west-1/s3/aws4_request`);
    // S3 checks the policy's signature with the secret key, and the policy's conditions against the form.
    const expected = createHmac('sha256', signingKey(SECRET, date, 'eu-west-1', 's3')).update(f.policy).digest('hex');
    assert.equal(f['x-amz-signature'], expected);
    const policy = JSON.parse(Buffer.from(f.policy, 'base64').toString());
    assert.equal(policy.expiration, new Date((Math.floor(now) + 3600) * 1000).toISOString());
    assert.deepEqual(policy.conditions, [
      { key: f.key }, { 'x-amz-algorithm': 'AWS4-HMAC-SHA256' }, { 'x-amz-credential': f['x-amz-credential'] }, { 'x-amz-date': f['x-amz-date'] },
      ['content-length-range', 2048, 2048],
    ]);

    const shown = await app().request('GET', `/api/v0/deployment/${dep.deployment_id}/`, { key: owner, query: { api_key: owner } });
    assert.equal(shown.status, 200, shown.raw);
    const d = shown.body.deployment;
    for (const k of DETAIL_KEYS) assert.ok(k in d, `deployment has ${k}`);
    assert.deepEqual(d, {
      id: dep.deployment_id, name: 'square', tag: 'default', image: 'vastai/base-image:latest', env: config().env,
      search_params: 'geolocation=Deploy_Zone num_gpus=1', storage: 20, endpoint_id: dep.endpoint_id, workergroup_id: dep.workergroup_id,
      endpoint_state: 'active', worker_count: 0, file_hash: 'a1b2c3d4e5f6', file_size: 2048, s3_key: f.key, version_label: null,
      current_version_id: dep.version_id, last_healthy_version_id: null, ttl: null, last_client_heartbeat: null, created_at: now, updated_at: now,
    });
    const list = await app().request('GET', '/api/v0/deployments', { key: owner });
    assert.deepEqual(list.body, { success: true, deployments: [d] });
    const ep = (await app().request('GET', `/api/v0/endptjobs/${dep.endpoint_id}/`, { key: owner })).body.result;
    assert.equal(ep.endpoint_name, 'square');
    assert.deepEqual([ep.cold_workers, ep.max_workers, ep.min_load], [1, 2, 1]);
    const wg = (await app().request('GET', '/api/v0/workergroups/', { key: owner })).body.results.find((w: any) => w.id === dep.workergroup_id);
    assert.equal(wg.deployment_id, dep.deployment_id);
    assert.equal(wg.endpoint_id, dep.endpoint_id);
  });

  test('the autoscaler runs the current version: its image, env and disk, with IS_DEPLOYMENT and DEPLOYMENT_ID', async () => {
    const { owner, dep } = await deployed();
    await app().advance(1);
    const d = (await app().request('GET', `/api/v0/deployment/${dep.deployment_id}/`, { key: owner })).body.deployment;
    assert.equal(d.worker_count, 1);
    const [worker] = (await app().request('GET', '/api/v0/workergroups/', { key: owner })).body.results.find((w: any) => w.id === dep.workergroup_id).workers;
    const inst = (await app().request('GET', `/api/v0/instances/${worker}/`, { key: owner })).body.instances;
    assert.equal(inst.image_uuid, 'vastai/base-image:latest');
    assert.equal(inst.disk_space, 20);
    const env = Object.fromEntries(inst.extra_env);
    assert.deepEqual([env.IS_DEPLOYMENT, env.DEPLOYMENT_ID, env.REPORT_ADDR], ['true', String(dep.deployment_id), 'http://127.0.0.1:9']);
  });

  test('stop: its endpoint releases every worker and keeps none; start: it scales again; another user is refused', async () => {
    const { owner, dep } = await deployed();
    const id = dep.deployment_id;
    await app().advance(1);
    const show = async () => (await app().request('GET', `/api/v0/deployment/${id}/`, { key: owner })).body.deployment;
    assert.deepEqual([(await show()).endpoint_state, (await show()).worker_count], ['active', 1]);
    const stopped = await app().request('POST', `/api/v0/deployment/${id}/stop/`, { key: owner, body: {} });
    assert.equal(stopped.status, 200, stopped.raw);
    assert.equal(stopped.body.success, true);
    assert.equal((await show()).endpoint_state, 'stopped');
    await app().advance(1);
    assert.equal((await show()).worker_count, 0, 'released at the autoscaler run due at once');
    await app().advance(600);
    assert.equal((await show()).worker_count, 0, 'none while stopped');
    const again = await app().request('POST', `/api/v0/deployment/${id}/stop/`, { key: owner, body: {} });
    assert.match(again.body.msg, /already stopped/);
    const other = await app().createUser();
    assert.equal((await app().request('POST', `/api/v0/deployment/${id}/start/`, { key: other.api_key, body: {} })).status, 404);
    assert.equal((await app().request('POST', `/api/v0/deployment/${id}/start/`, { key: owner, body: { x: 1 } })).status, 400);
    const started = await app().request('POST', `/api/v0/deployment/${id}/start/`, { key: owner, body: {} });
    assert.equal(started.status, 200, started.raw);
    await app().advance(1);
    assert.deepEqual([(await show()).endpoint_state, (await show()).worker_count], ['active', 1]);
  });

  test('the same config again: exists, no upload; a scaling change: autoscale_update', async () => {
    const { owner, dep } = await deployed();
    const same = await put(app(), owner, config());
    assert.equal(same.status, 200, same.raw);
    assert.deepEqual(same.body, {
      success: true, action: 'exists', deployment_id: dep.deployment_id, endpoint_id: dep.endpoint_id, workergroup_id: dep.workergroup_id,
      version_id: dep.version_id, evicted_versions: [],
    });
    const scaled = await put(app(), owner, config({ max_workers: 3 }));
    assert.equal(scaled.body.action, 'autoscale_update');
    assert.equal('upload_url' in scaled.body, false);
    assert.equal((await app().request('GET', `/api/v0/endptjobs/${dep.endpoint_id}/`, { key: owner })).body.result.max_workers, 3);
    const bad = await put(app(), owner, config({ cold_workers: 9, max_workers: 3 }));
    assert.equal(bad.status, 400, bad.raw);
    assert.equal(bad.body.msg, 'cold_workers must be from 0 to max_workers');
  });

  test('new code: soft_update, a new version and an upload form; an old tarball again is not asked for', async () => {
    const { owner, dep } = await deployed();
    await app().advance(1); // the autoscaler starts its cold worker, for the rolling update below
    const res = await put(app(), owner, config({ file_hash: 'ffff0001', file_size: 4096, image: 'vastai/base-image:v2', max_workers: 3, version_label: 'v2' }));
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.action, 'soft_update');
    assert.equal(res.body.upload_fields.key, `deployments/${dep.deployment_id}/ffff0001.tar.gz`);
    assert.notEqual(res.body.version_id, dep.version_id);
    const versions = await app().request('GET', `/api/v0/deployment/${dep.deployment_id}/versions/`, { key: owner });
    assert.equal(versions.status, 200, versions.raw);
    assert.equal(versions.body.success, true);
    assert.deepEqual(versions.body.versions.map((v: any) => [v.id, v.file_hash, v.image, v.version_label, v.current]), [
      [res.body.version_id, 'ffff0001', 'vastai/base-image:v2', 'v2', true],
      [dep.version_id, 'a1b2c3d4e5f6', 'vastai/base-image:latest', null, false],
    ]);
    for (const v of versions.body.versions) assert.equal('image_login_sealed' in v, false);
    const back = await put(app(), owner, config({ max_workers: 3 }));
    assert.equal(back.body.action, 'soft_update');
    assert.equal('upload_url' in back.body, false, 'the store already has that tarball');

    // The SDK's rolling update after a soft_update: the workers are replaced by workers of the current version.
    const before = (await app().request('GET', '/api/v0/workergroups/', { key: owner })).body.results.find((w: any) => w.id === dep.workergroup_id).workers;
    const v3 = await put(app(), owner, config({ file_hash: 'ffff0001', file_size: 4096, image: 'vastai/base-image:v2', max_workers: 3, version_label: 'v2' }));
    assert.equal(v3.body.action, 'soft_update');
    const upd = await app().request('POST', '/update_workers/', { key: owner, query: { api_key: owner }, body: { workergroup_id: dep.workergroup_id, api_key: owner } });
    assert.equal(upd.status, 200, upd.raw);
    assert.deepEqual(upd.body, { success: true, msg: `workergroup ${dep.workergroup_id}: 1 worker(s) replaced at the autoscaler's next run` });
    await app().advance(1);
    const after = (await app().request('GET', '/api/v0/workergroups/', { key: owner })).body.results.find((w: any) => w.id === dep.workergroup_id).workers;
    assert.equal(after.length, 1);
    assert.notDeepEqual(after, before);
    assert.equal((await app().request('GET', `/api/v0/instances/${before[0]}/`, { key: owner })).body.instances, null, 'the old worker is destroyed');
    const inst = (await app().request('GET', `/api/v0/instances/${after[0]}/`, { key: owner })).body.instances;
    assert.equal(inst.image_uuid, 'vastai/base-image:v2');
  });

  test(`at most ${MAX_DEPLOYMENT_VERSIONS} versions are kept: the oldest are evicted, never the current one`, async () => {
    const { api_key } = await app().createUser();
    const first = await put(app(), api_key, config({ name: 'many', search_params: 'num_gpus=999', cold_workers: 0 }));
    assert.equal(first.status, 200, first.raw);
    const evicted: number[] = [];
    for (let i = 1; i <= MAX_DEPLOYMENT_VERSIONS + 1; i++) {
      const r = await put(app(), api_key, config({ name: 'many', search_params: 'num_gpus=999', cold_workers: 0, file_hash: `h${i}` }));
      assert.equal(r.body.action, 'soft_update');
      evicted.push(...r.body.evicted_versions);
    }
    const versions = (await app().request('GET', `/api/v0/deployment/${first.body.deployment_id}/versions/`, { key: api_key })).body.versions;
    assert.equal(versions.length, MAX_DEPLOYMENT_VERSIONS);
    assert.equal(versions[0].file_hash, `h${MAX_DEPLOYMENT_VERSIONS + 1}`);
    assert.equal(versions[0].current, true);
    assert.deepEqual(evicted, [first.body.version_id, first.body.version_id + 1]);
  });

  test('download_url: the owner and the deployment\'s workers get a signed URL; another instance key is refused', async () => {
    const { owner, dep } = await deployed();
    const res = await app().request('GET', `/api/v0/deployment/${dep.deployment_id}/download_url/`, { key: owner });
    assert.equal(res.status, 200, res.raw);
    const u = new URL(res.body.download_url);
    assert.equal(`${u.origin}${u.pathname}`, `https://s3.example.test/tarballs/deployments/${dep.deployment_id}/a1b2c3d4e5f6.tar.gz`);
    assert.equal(u.searchParams.get('X-Amz-Expires'), '3600');
    assert.match(u.searchParams.get('X-Amz-Signature') ?? '', /^[0-9a-f]{64}$/);
    assert.equal(u.username, '', 'the credentials are not in the URL');

    // An instance key: the owner's other instance is not a worker.
    const offer = (await app().request('POST', '/api/v0/bundles/', { key: owner, body: { geolocation: { eq: 'Deploy Zone' }, num_gpus: { eq: 1 }, limit: 1 } })).body.offers[0];
    const rented = await app().request('PUT', `/api/v0/asks/${offer.id}/`, { key: owner, body: { image: 'busybox' } });
    assert.equal(rented.status, 200, rented.raw);
    const refused = await app().request('GET', `/api/v0/deployment/${dep.deployment_id}/download_url/`, { key: rented.body.instance_api_key });
    assert.equal(refused.status, 403, refused.raw);
    assert.deepEqual(refused.body, { success: false, error: 'permission_denied', msg: `instance ${rented.body.new_contract} is not a worker of deployment ${dep.deployment_id}` });
  });

  test('its endpoint and workergroup are deleted with the deployment only', async () => {
    const { owner, dep } = await deployed();
    const wg = await app().request('DELETE', `/api/v0/workergroups/${dep.workergroup_id}/`, { key: owner });
    assert.equal(wg.status, 409, wg.raw);
    assert.deepEqual(wg.body, { success: false, error: 'conflict', msg: `workergroup ${dep.workergroup_id} runs deployment ${dep.deployment_id}: delete the deployment instead` });
    const ep = await app().request('DELETE', `/api/v0/endptjobs/${dep.endpoint_id}/`, { key: owner });
    assert.equal(ep.status, 409, ep.raw);
    assert.equal((await app().request('DELETE', `/api/v0/autojobs/${dep.workergroup_id}/`, { key: owner })).status, 409);
  });

  test('another user\'s deployment is not found, by id or by name', async () => {
    const { dep } = await deployed();
    const { api_key: other } = await app().createUser();
    const id = dep.deployment_id;
    for (const [method, url] of [['GET', `/api/v0/deployment/${id}/`], ['GET', `/api/v0/deployment/${id}/versions/`], ['DELETE', `/api/v0/deployment/${id}/`],
      ['POST', `/api/v0/deployment/${id}/heartbeat/`], ['GET', `/api/v0/deployment/${id}/download_url/`]] as const) {
      const res = await app().request(method, url, { key: other });
      assert.equal(res.status, 404, `${method} ${url}: ${res.raw}`);
      assert.deepEqual(res.body, { success: false, error: 'not_found', msg: `deployment ${id} not found` });
    }
    const byName = await app().request('DELETE', '/api/v0/deployments/', { key: other, body: { name: 'square' } });
    assert.equal(byName.status, 404, byName.raw);
    assert.deepEqual((await app().request('GET', '/api/v0/deployments/', { key: other })).body.deployments, []);
    // Their own deployment of the same name is theirs alone.
    const theirs = await put(app(), other, config({ search_params: 'num_gpus=999', cold_workers: 0 }));
    assert.equal(theirs.body.action, 'created');
    assert.notEqual(theirs.body.deployment_id, id);
    assert.equal((await app().request('DELETE', `/api/v0/deployment/${theirs.body.deployment_id}/`, { key: other })).status, 200);
  });

  test('bad input is a 400 naming the field', async () => {
    const { owner } = await deployed();
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ file_size: undefined }, /file_size is required/],
      [{ name: '' }, /name/],
      [{ file_hash: '../../etc' }, /file_hash/],
      [{ file_size: -1 }, /file_size/],
      [{ ttl: 0 }, /ttl/],
      [{ tag: '' }, /tag/],
      [{ target_util: 2 }, /target_util/],
      [{ search_params: 'bogus_field=1' }, /bogus_field/],
      [{ endpoint_name: 'x' }, /endpoint_name is not an allowed field/],
      [{ user_id: 1 }, /user_id/],
      [{ env: 'PORT=3000' }, /^env: unexpected "PORT=3000"/],
    ];
    for (const [patch, msg] of cases) {
      const res = await put(app(), owner, config(patch));
      assert.equal(res.status, 400, `${JSON.stringify(patch)}: ${res.raw}`);
      assert.equal(res.body.error, 'bad_request');
      assert.match(res.body.msg, msg);
    }
    assert.equal((await app().request('DELETE', '/api/v0/deployments/', { key: owner, body: {} })).status, 400);
    assert.equal((await app().request('GET', '/api/v0/deployment/abc/', { key: owner })).status, 400);
  });

  test('ttl: heartbeats keep it; without them it is deleted with its endpoint and workers', async () => {
    const { api_key } = await app().createUser();
    const made = await put(app(), api_key, config({ name: 'brief', ttl: 100, search_params: 'num_gpus=999', cold_workers: 0 }));
    assert.equal(made.status, 200, made.raw);
    const id = made.body.deployment_id;
    await app().advance(60);
    const beat = await app().request('POST', `/api/v0/deployment/${id}/heartbeat/`, { key: api_key });
    assert.equal(beat.status, 200, beat.raw);
    assert.deepEqual(beat.body, { success: true, msg: `deployment ${id} kept for 100 s more` });
    await app().advance(60);
    const alive = await app().request('GET', `/api/v0/deployment/${id}/`, { key: api_key });
    assert.equal(alive.status, 200, 'the heartbeat at 60 s keeps it past 100 s');
    assert.equal(alive.body.deployment.last_client_heartbeat, app().clock.now() - 60);
    await app().advance(41);
    assert.equal((await app().request('GET', `/api/v0/deployment/${id}/`, { key: api_key })).status, 404, 'expired 100 s after the last heartbeat');
    assert.equal((await app().request('GET', `/api/v0/endptjobs/${made.body.endpoint_id}/`, { key: api_key })).status, 404);
  });

  test('two PUTs creating the same deployment at once make one deployment and one endpoint', async () => {
    const { api_key } = await app().createUser();
    const body = config({ name: 'raced', search_params: 'num_gpus=999', cold_workers: 0 });
    const [a, b] = await Promise.all([put(app(), api_key, body), put(app(), api_key, body)]);
    const outcomes = [a, b].map((r) => (r.status === 200 ? r.body.action : `${r.status} ${r.body.error}`)).sort();
    // SQLite runs the two one after the other; on PostgreSQL the second loses the race on the unique index, rolls
    // back and runs again: either way it finds the first.
    assert.deepEqual(outcomes, ['created', 'exists']);
    const listed = (await app().request('GET', '/api/v0/deployments/', { key: api_key })).body.deployments;
    assert.equal(listed.length, 1);
    const endpoints = (await app().request('GET', '/api/v0/endptjobs/', { key: api_key })).body.results;
    assert.deepEqual(endpoints.map((e: any) => e.id), [listed[0].endpoint_id], 'the loser\'s endpoint was rolled back');
  });

  test('delete by id, and by name (every tag, or one)', async () => {
    const { api_key } = await app().createUser();
    const q = { search_params: 'num_gpus=999', cold_workers: 0 };
    const a = (await put(app(), api_key, config({ ...q, name: 'multi', tag: 'prod' }))).body;
    const b = (await put(app(), api_key, config({ ...q, name: 'multi', tag: 'dev' }))).body;
    const c = (await put(app(), api_key, config({ ...q, name: 'multi', tag: 'test' }))).body;
    assert.deepEqual([a.action, b.action, c.action], ['created', 'created', 'created']);
    assert.equal((await app().request('GET', `/api/v0/endptjobs/${a.endpoint_id}/`, { key: api_key })).body.result.endpoint_name, 'multi-prod');
    const one = await app().request('DELETE', '/api/v0/deployments', { key: api_key, body: { name: 'multi', tag: 'dev' } });
    assert.deepEqual(one.body, { success: true, count: 1, msg: 'deleted 1 deployment(s)' });
    const byId = await app().request('DELETE', `/api/v0/deployment/${c.deployment_id}/`, { key: api_key, body: {} });
    assert.deepEqual(byId.body, { success: true, msg: `deployment ${c.deployment_id} deleted` });
    const rest = await app().request('DELETE', '/api/v0/deployments/', { key: api_key, body: { name: 'multi' } });
    assert.deepEqual(rest.body, { success: true, count: 1, msg: 'deleted 1 deployment(s)' });
    assert.deepEqual((await app().request('GET', '/api/v0/deployments/', { key: api_key })).body.deployments, []);
    assert.deepEqual((await app().request('GET', '/api/v0/endptjobs/', { key: api_key })).body.results, [], 'their endpoints went with them');
    const none = await app().request('DELETE', '/api/v0/deployments/', { key: api_key, body: { name: 'multi' } });
    assert.deepEqual(none.body, { success: false, error: 'not_found', msg: 'no deployment named "multi"' });
  });
}, { config: { GPUPLANE_BLOB_STORE_URL: BLOB } });

describe('deployments: a blob store without credentials', () => {
  forEachDialect('unsigned uploads', (app) => {
    test('the upload form is the bucket URL and the key; downloads are the object URL', async () => {
      const { api_key } = await app().createUser();
      const res = await put(app(), api_key, config({ search_params: 'num_gpus=999', cold_workers: 0 }));
      assert.equal(res.status, 200, res.raw);
      assert.equal(res.body.upload_url, 'http://blobs.internal:9000/deploy/');
      assert.deepEqual(res.body.upload_fields, { key: `deployments/${res.body.deployment_id}/a1b2c3d4e5f6.tar.gz` });
      const dl = await app().request('GET', `/api/v0/deployment/${res.body.deployment_id}/download_url/`, { key: api_key });
      assert.equal(dl.body.download_url, `http://blobs.internal:9000/deploy/deployments/${res.body.deployment_id}/a1b2c3d4e5f6.tar.gz`);
    });
  }, { config: { GPUPLANE_BLOB_STORE_URL: 'http://blobs.internal:9000/deploy' } });
});
