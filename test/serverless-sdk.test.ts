// The serverless SDK's calls (docs/spec/client-compat-more.md §e and "Everywhere"): one endpoint by id with its own
// api_key, workergroups at /workergroups/, the key taken from ?api_key=, and the routing call POST /route/ whose
// signed worker address verifies as the pyworker checks it (RSA PKCS#1 v1.5 SHA-256 over json.dumps({"url": url},
// indent=4, sort_keys=True), public key from GET /pubkey/).
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createVerify } from 'node:crypto';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { addMachine } from './instances-fixtures.js';
import { ROUTE_SIGNATURE_TTL_S, workerTarget, type WorkerAddress } from '../src/serverless/serverless-router.js';

const login = { docker_login_repo: '', docker_login_user: '', docker_login_pass: '' };
/** The fields the serverless SDK's EndpointData requires of every endpoint. */
const SDK_ENDPOINT_KEYS = ['id', 'endpoint_name', 'api_key', 'user_id', 'created_at'];

async function templateHash(app: TestApp, key: string, env?: string): Promise<string> {
  const res = await app.request('POST', '/api/v0/template/', { key, body: { name: 'worker', image: 'vastai/pyworker', ...(env ? { env } : {}), ...login } });
  assert.equal(res.status, 200, res.raw);
  return res.body.template.hash_id;
}

/**
 * A worker's check of `auth_signature`, written from Python's json.dumps(fields, indent=4, sort_keys=True) of the
 * auth_data it is sent (the reply's keys), independently of the server's code.
 */
function verifiesAuth(pem: string, a: Record<string, any>): boolean {
  const keys = ['cost', 'endpoint', 'reqnum', 'request_idx', 'url', 'valid_until'];
  const text = `{\n${keys.map((k) => `    ${JSON.stringify(k)}: ${JSON.stringify(a[k])}`).join(',\n')}\n}`;
  return createVerify('sha256').update(text).verify(pem, Buffer.from(a.auth_signature, 'base64'));
}

/** The pyworker's check: the signature over Python's json.dumps of {"url": url} with an indent of 4. */
function verifies(pem: string, url: string, signature: string): boolean {
  const text = `{\n    "url": ${JSON.stringify(url)}\n}`;
  return createVerify('sha256').update(text).verify(pem, Buffer.from(signature, 'base64'));
}

forEachDialect('serverless SDK: endpoints, workergroups, ?api_key=', (app) => {
  test('GET /endptjobs/{id}/ gives the endpoint with its own api_key, as the list does; another user gets 404', async () => {
    const { api_key } = await app().createUser();
    // As the serverless SDK sends it: Bearer and ?api_key=, only the non-null config fields.
    const made = await app().request('POST', '/api/v0/endptjobs/', { key: api_key, query: { api_key }, body: { endpoint_name: 'sdk-one', max_workers: 8 } });
    assert.equal(made.status, 200, made.raw);
    const id = made.body.result;
    const one = await app().request('GET', `/api/v0/endptjobs/${id}/`, { key: api_key, query: { api_key } });
    assert.equal(one.status, 200, one.raw);
    assert.equal(one.body.success, true);
    const e = one.body.result;
    for (const k of SDK_ENDPOINT_KEYS) assert.ok(k in e, `result has ${k}`);
    assert.equal(e.id, id);
    assert.equal(e.endpoint_name, 'sdk-one');
    assert.equal(e.max_workers, 8);
    assert.equal(e.endpoint_state, 'active');
    assert.equal(e.auto_delete_in_seconds, null);
    assert.equal(e.auto_delete_due_24h, false);
    assert.match(e.api_key, /^gpe_[A-Za-z0-9_-]{43}$/);
    const list = await app().request('GET', '/api/v0/endptjobs/', { key: api_key, query: { client_id: 'me', api_key } });
    assert.deepEqual(list.body.results, [e], 'the list carries the same object, api_key included');

    // The key is kept as its digest and sealed, never in clear.
    const row = await app().store.db.selectFrom('serverless_endpoints').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    assert.equal(row.api_key_hash, createHash('sha256').update(e.api_key).digest('hex'));
    assert.ok(row.api_key_sealed && !row.api_key_sealed.includes(e.api_key));

    const { api_key: other } = await app().createUser();
    const theirs = await app().request('GET', `/api/v0/endptjobs/${id}/`, { key: other });
    assert.equal(theirs.status, 404, theirs.raw);
    assert.deepEqual(theirs.body, { success: false, error: 'not_found', msg: `endpoint ${id} not found` });
    assert.equal((await app().request('GET', '/api/v0/endptjobs/0/', { key: api_key })).status, 400);
  });

  test('an endpoint made before its key existed gets one when first read, the same every time', async () => {
    const { api_key } = await app().createUser();
    const id = (await app().request('POST', '/api/v0/endptjobs/', { key: api_key, body: { endpoint_name: 'old' } })).body.result;
    await app().store.db.updateTable('serverless_endpoints').set({ api_key_hash: null, api_key_sealed: null }).where('id', '=', id).execute();
    const first = (await app().request('GET', `/api/v0/endptjobs/${id}/`, { key: api_key })).body.result.api_key;
    const again = (await app().request('GET', '/api/v0/endptjobs/', { key: api_key })).body.results[0].api_key;
    assert.match(first, /^gpe_/);
    assert.equal(again, first);
  });

  test('?api_key= authenticates the serverless SDK\'s routes without a header, and nothing else', async () => {
    const { api_key } = await app().createUser();
    const list = await app().request('GET', '/api/v0/endptjobs/', { key: null, query: { client_id: 'me', api_key } });
    assert.equal(list.status, 200, list.raw);
    assert.equal((await app().request('GET', '/api/v0/workergroups/', { key: null, query: { api_key } })).status, 200);
    assert.equal((await app().request('GET', '/api/v0/deployments', { key: null, query: { api_key } })).status, 200);
    const wrong = await app().request('GET', '/api/v0/endptjobs/', { key: null, query: { api_key: 'gpk_not_a_key_0000000000000000000000' } });
    assert.equal(wrong.status, 401, wrong.raw);
    assert.equal(wrong.body.error, 'auth_error');
    // Elsewhere the parameter is ignored (client-compat.md "Everywhere"): no header, no key.
    const elsewhere = await app().request('GET', '/api/v0/users/current/', { key: null, query: { api_key } });
    assert.equal(elsewhere.status, 401, elsewhere.raw);
    // vastai's /autojobs/ is not the SDK's: the query key does not count there either.
    assert.equal((await app().request('GET', '/api/v0/autojobs/', { key: null, query: { api_key } })).status, 401);
  });

  test('workergroups: created as the SDK sends them (query string or filter object), listed, deleted; /autojobs/ sees the same', async () => {
    const { api_key } = await app().createUser();
    const hash = await templateHash(app(), api_key);
    const ep = (await app().request('POST', '/api/v0/endptjobs/', { key: api_key, body: { endpoint_name: 'wg', cold_workers: 0 } })).body.result;
    // The body seen on the wire (client-compat-more §e).
    const a = await app().request('POST', '/api/v0/workergroups/', { key: api_key, query: { api_key }, body: { search_params: 'gpu_name=RTX_4090', endpoint_id: ep, template_hash: hash, gpu_ram: 24.0 } });
    assert.equal(a.status, 200, a.raw);
    assert.deepEqual(Object.keys(a.body).sort(), ['id', 'success']);
    const filter = { gpu_name: { eq: 'RTX 4090' }, num_gpus: { gte: 1 } };
    const b = await app().request('POST', '/api/v0/workergroups/', { key: api_key, body: { search_params: filter, endpoint_name: 'wg', template_hash: hash, cold_workers: 0 } });
    assert.equal(b.status, 200, b.raw);
    const listed = await app().request('GET', '/api/v0/workergroups/', { key: api_key, query: { api_key } });
    assert.equal(listed.status, 200, listed.raw);
    const byId = new Map(listed.body.results.map((w: any) => [w.id, w]));
    const wa: any = byId.get(a.body.id);
    const wb: any = byId.get(b.body.id);
    assert.equal(wa.endpoint_id, ep);
    assert.equal(wa.gpu_ram, 24);
    assert.deepEqual(wa.search_query, { gpu_name: { eq: 'RTX 4090' } });
    assert.equal(wa.deployment_id, null);
    assert.equal(wb.endpoint_id, ep);
    assert.deepEqual(wb.search_query, filter);
    assert.equal(wb.search_params, JSON.stringify(filter), 'a filter object is kept as its JSON');
    const autojobs = await app().request('GET', '/api/v0/autojobs/', { key: api_key });
    assert.deepEqual(autojobs.body.results, listed.body.results, 'the same records as /autojobs/');

    const { api_key: other } = await app().createUser();
    const theirs = await app().request('DELETE', `/api/v0/workergroups/${a.body.id}/`, { key: other });
    assert.equal(theirs.status, 404, theirs.raw);
    assert.equal(theirs.body.error, 'not_found');
    const gone = await app().request('DELETE', `/api/v0/workergroups/${a.body.id}/`, { key: api_key, query: { api_key } });
    assert.equal(gone.status, 200, gone.raw);
    assert.deepEqual(gone.body, { success: true, msg: `workergroup ${a.body.id} deleted` });
    const after = (await app().request('GET', '/api/v0/workergroups/', { key: api_key })).body.results.map((w: any) => w.id);
    assert.deepEqual(after, [b.body.id]);
  });

  test('workergroups: bad input is a 400 naming the field', async () => {
    const { api_key } = await app().createUser();
    const hash = await templateHash(app(), api_key);
    const ep = (await app().request('POST', '/api/v0/endptjobs/', { key: api_key, body: { endpoint_name: 'bad' } })).body.result;
    const base = { endpoint_id: ep, template_hash: hash, search_params: '' };
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ search_params: 'no_such_field=1' }, /no_such_field/],
      [{ search_params: { no_such_field: { eq: 1 } } }, /no_such_field/],
      [{ search_params: 5 }, /search_params/],
      [{ surprise: 1 }, /surprise is not an allowed field/],
      [{ user_id: 1 }, /user_id/],
      [{ endpoint_id: 'x' }, /endpoint_id/],
      [{ target_util: 3 }, /target_util/],
    ];
    for (const [patch, msg] of cases) {
      const res = await app().request('POST', '/api/v0/workergroups/', { key: api_key, body: { ...base, ...patch } });
      assert.equal(res.status, 400, `${JSON.stringify(patch)}: ${res.raw}`);
      assert.equal(res.body.error, 'bad_request');
      assert.match(res.body.msg, msg);
    }
  });
});

forEachDialect('serverless SDK: POST /route/ and GET /pubkey/', (app) => {
  // Made once, before the tests, and read by each (the one that changes a worker puts it back), so any test runs
  // alone: an owner, a machine in Route Zone, the endpoint `router` whose worker exposes the pyworker's port and
  // `bare` whose worker does not, each worker running.
  let owner: string;
  let endpointKey: string;
  let otherEndpointKey: string;
  let ep: number;
  let bare: number;
  const route = (body: Record<string, unknown>, opts: { key?: string | null; query?: Record<string, string> } = {}) =>
    app().request('POST', '/route/', { key: opts.key === undefined ? endpointKey : opts.key, query: opts.query, body });

  before(async () => {
    owner = (await app().createUser({ credit: 1000 })).api_key;
    await addMachine(app(), { num_gpus: 2, geolocation: 'Route Zone', price_gpu: 0.3 });
    // The pyworker listens on WORKER_PORT (3000 by default): the template exposes it.
    const hash = await templateHash(app(), owner, '-p 3000:3000');
    ep = (await app().request('POST', '/api/v0/endptjobs/', { key: owner, body: { endpoint_name: 'router', cold_workers: 1, max_workers: 1, min_load: 1 } })).body.result;
    endpointKey = (await app().request('GET', `/api/v0/endptjobs/${ep}/`, { key: owner })).body.result.api_key;
    const wg = await app().request('POST', '/api/v0/workergroups/', { key: owner, body: { endpoint_id: ep, template_hash: hash, search_params: 'geolocation=Route_Zone num_gpus=1' } });
    assert.equal(wg.status, 200, wg.raw);
    // Another endpoint whose workers do not expose the worker port.
    bare = (await app().request('POST', '/api/v0/endptjobs/', { key: owner, body: { endpoint_name: 'bare', cold_workers: 1, max_workers: 1, min_load: 1 } })).body.result;
    otherEndpointKey = (await app().request('GET', `/api/v0/endptjobs/${bare}/`, { key: owner })).body.result.api_key;
    const plain = await templateHash(app(), owner);
    assert.equal((await app().request('POST', '/api/v0/workergroups/', { key: owner, body: { endpoint_id: bare, template_hash: plain, search_params: 'geolocation=Route_Zone num_gpus=1' } })).status, 200);
    // The autoscaler rents at once; the workers boot within a minute.
    await app().advance(1);
    await app().advance(60);
  });

  test('before any worker runs: a reply without url, with a request_idx to poll with', async () => {
    // An endpoint of its own: the shared ones' workers already run.
    const user = (await app().createUser({ credit: 1000 })).api_key;
    await addMachine(app(), { num_gpus: 1, geolocation: 'Early Zone', price_gpu: 0.3 });
    const hash = await templateHash(app(), user, '-p 3000:3000');
    const early = (await app().request('POST', '/api/v0/endptjobs/', { key: user, body: { endpoint_name: 'early', cold_workers: 1, max_workers: 1, min_load: 1 } })).body.result;
    const key = (await app().request('GET', `/api/v0/endptjobs/${early}/`, { key: user })).body.result.api_key;

    const none = await route({ endpoint: 'early', api_key: key, cost: 100, request_idx: 0, replay_timeout: 60.0 }, { key, query: { api_key: key } });
    assert.equal(none.status, 200, none.raw);
    assert.equal('url' in none.body, false, 'no url key: the SDK reads that as waiting');
    assert.equal(none.body.status, 'waiting');
    assert.match(none.body.msg, /no worker is ready: the endpoint has no workergroup/);
    assert.ok(Number.isInteger(none.body.request_idx) && none.body.request_idx > 0);
    const again = await route({ endpoint: 'early', request_idx: none.body.request_idx, cost: 100 }, { key });
    assert.equal(again.body.request_idx, none.body.request_idx, 'a poll keeps its request_idx');

    const wg = await app().request('POST', '/api/v0/workergroups/', { key: user, body: { endpoint_id: early, template_hash: hash, search_params: 'geolocation=Early_Zone num_gpus=1' } });
    assert.equal(wg.status, 200, wg.raw);
    // The autoscaler has rented; the worker is still booting.
    await app().advance(1);
    const booting = await route({ endpoint: 'early' }, { key });
    assert.equal(booting.body.status, 'waiting');
    assert.match(booting.body.msg, /no worker is running yet/);
  });

  test('a running worker: its address, signed; the signature verifies with /pubkey/ and fails when tampered with', async () => {
    const workers = (await app().request('GET', '/api/v0/workergroups/', { key: owner })).body.results.find((w: any) => w.endpoint_id === ep).workers;
    assert.equal(workers.length, 1);
    const inst = (await app().request('GET', `/api/v0/instances/${workers[0]}/`, { key: owner })).body.instances;
    assert.equal(inst.actual_status, 'running');
    const url = `http://${inst.public_ipaddr}:${inst.ports['3000/tcp'][0].HostPort}`;

    const res = await route({ endpoint: 'router', api_key: endpointKey, cost: 250, request_idx: 0, replay_timeout: 60.0 });
    assert.equal(res.status, 200, res.raw);
    const r = res.body;
    assert.deepEqual(Object.keys(r).sort(), ['auth_signature', 'cost', 'endpoint', 'reqnum', 'request_idx', 'signature', 'status', 'success', 'url', 'valid_until']);
    assert.deepEqual({ ...r, signature: undefined, auth_signature: undefined }, {
      success: true, status: 'ready', endpoint: 'router', cost: 250, request_idx: r.request_idx, reqnum: r.request_idx, url, signature: undefined,
      valid_until: app().clock.now() + ROUTE_SIGNATURE_TTL_S, auth_signature: undefined,
    });

    const pub = await app().request('GET', '/pubkey/', { key: null });
    assert.equal(pub.status, 200);
    assert.match(String(pub.headers['content-type']), /^text\/plain/);
    assert.match(pub.raw, /^-----BEGIN PUBLIC KEY-----\n[\s\S]+\n-----END PUBLIC KEY-----\n$/);
    assert.ok(verifies(pub.raw, url, r.signature), 'the pyworker accepts the reply');
    assert.equal(verifies(pub.raw, url.replace(/:(\d+)$/, (_m, p) => `:${Number(p) + 1}`), r.signature), false, 'another address fails');
    const flipped = Buffer.from(r.signature, 'base64');
    flipped[10] ^= 1;
    assert.equal(verifies(pub.raw, url, flipped.toString('base64')), false, 'a tampered signature fails');
    assert.equal((await app().request('GET', '/pubkey/', { key: null })).raw, pub.raw, 'one key pair');
    // The private key is sealed at rest.
    const kv = await app().store.db.selectFrom('kv').select('value').where('key', '=', 'serverless_signing_key').executeTakeFirstOrThrow();
    assert.doesNotMatch(kv.value, /PRIVATE KEY/);

    // Each new request gets the next number.
    const next = await route({ endpoint: 'router' });
    assert.equal(next.body.request_idx, r.request_idx + 1);
    assert.equal(next.body.url, url);
    assert.ok(verifies(pub.raw, url, next.body.signature));

    // issue 29 item 19: the pyworker checks only the URL's signature, so the same pair verifies again (a replay it
    // cannot tell); auth_signature binds the endpoint, the request number, the cost, the URL and a deadline, so a
    // worker that checks it tells an altered or another endpoint's auth_data, a stale one, and a reqnum it served.
    assert.ok(verifies(pub.raw, url, r.signature), 'the URL signature alone verifies again: the pyworker cannot tell a replay');
    assert.ok(verifiesAuth(pub.raw, r), 'auth_signature verifies over the reply\'s own fields');
    assert.ok(verifiesAuth(pub.raw, next.body));
    assert.notEqual(next.body.reqnum, r.reqnum, 'each request its own number: a worker that saw reqnum r refuses it again');
    for (const altered of [{ reqnum: next.body.reqnum }, { endpoint: 'bare' }, { cost: 1 }, { valid_until: r.valid_until + 3600 }, { url: url.replace(/:(\d+)$/, ':22') }]) {
      assert.equal(verifiesAuth(pub.raw, { ...r, ...altered }), false, `altered ${JSON.stringify(altered)} fails`);
    }
  });

  test('a worker whose host port is outside its machine\'s range is not routed to: a host cannot have /route/ sign an address of its choosing', async () => {
    const workers = (await app().request('GET', '/api/v0/workergroups/', { key: owner })).body.results.find((w: any) => w.endpoint_id === ep).workers;
    const [row] = await app().store.db.selectFrom('instances').select(['id', 'ports']).where('id', '=', workers[0]).execute();
    // As a row stored before reports were checked (agent-server/agent-server-checks.ts refuses such a report now): port 22.
    await app().store.db.updateTable('instances').set({ ports: JSON.stringify({ '3000/tcp': [{ HostIp: '0.0.0.0', HostPort: '22' }] }) }).where('id', '=', row.id).execute();
    try {
      const res = await route({ endpoint: 'router' });
      assert.equal(res.status, 200, res.raw);
      assert.equal('url' in res.body, false, 'nothing signed');
      assert.equal(res.body.status, 'waiting');
      assert.match(res.body.msg, /1 running worker\(s\) have a host address or port outside what their machine declared/);
    } finally {
      await app().store.db.updateTable('instances').set({ ports: row.ports }).where('id', '=', row.id).execute();
    }
    assert.equal((await route({ endpoint: 'router' })).body.status, 'ready');
  });

  test('running workers that do not expose the worker port are not ready, and the reply says why', async () => {
    const res = await route({ endpoint: 'bare' }, { key: otherEndpointKey });
    assert.equal(res.status, 200, res.raw);
    assert.equal('url' in res.body, false);
    assert.match(res.body.msg, /1 running worker\(s\) expose no worker port \(WORKER_PORT, default 3000\/tcp\): add "-p 3000:3000"/);
  });

  test('the endpoint\'s key, from the header, ?api_key= or the body; an account key or another endpoint\'s is refused', async () => {
    assert.equal((await route({ endpoint: 'router' }, { key: null, query: { api_key: endpointKey } })).status, 200);
    assert.equal((await route({ endpoint: 'router', api_key: endpointKey }, { key: null })).status, 200);
    const noKey = await route({ endpoint: 'router' }, { key: null });
    assert.equal(noKey.status, 401, noKey.raw);
    assert.equal(noKey.body.error, 'auth_error');
    const account = await route({ endpoint: 'router' }, { key: owner });
    assert.equal(account.status, 401, account.raw);
    assert.deepEqual(account.body, { success: false, error: 'auth_error', msg: 'invalid endpoint API key' });
    const crossed = await route({ endpoint: 'router' }, { key: otherEndpointKey });
    assert.equal(crossed.status, 403, crossed.raw);
    assert.deepEqual(crossed.body, { success: false, error: 'permission_denied', msg: 'this key is not the key of endpoint "router"' });
    // A deleted endpoint's key routes nowhere (an endpoint of its own: the others' tests read `bare`).
    const gone = (await app().request('POST', '/api/v0/endptjobs/', { key: owner, body: { endpoint_name: 'gone', cold_workers: 0 } })).body.result;
    const goneKey = (await app().request('GET', `/api/v0/endptjobs/${gone}/`, { key: owner })).body.result.api_key;
    assert.equal((await route({ endpoint: 'gone' }, { key: goneKey })).status, 200);
    await app().request('DELETE', `/api/v0/endptjobs/${gone}/`, { key: owner });
    assert.equal((await route({ endpoint: 'gone' }, { key: goneKey })).status, 401);
  });

  test('bad input is a 400 naming the field', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{}, /endpoint is required/],
      [{ endpoint: '' }, /endpoint/],
      [{ endpoint: 'router', cost: -1 }, /cost/],
      [{ endpoint: 'router', request_idx: 'x' }, /request_idx/],
      [{ endpoint: 'router', request_idx: -2 }, /request_idx/],
      [{ endpoint: 'router', session: 1 }, /session is not an allowed field/],
    ];
    for (const [body, msg] of cases) {
      const res = await route(body);
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.raw}`);
      assert.equal(res.body.error, 'bad_request');
      assert.match(res.body.msg, msg);
    }
    const text = await app().request('POST', '/route/', { key: endpointKey, body: 'not json', headers: { 'content-type': 'application/json' } });
    assert.equal(text.status, 400);
  });
});

test('workerTarget: the machine\'s registered IPv4 address and a port of its declared range, nothing else (issue 29 item 19)', () => {
  const w = (over: Partial<WorkerAddress>): WorkerAddress => ({
    id: 1, public_ipaddr: '203.0.113.7', env: {}, direct_port_start: 40000, direct_port_count: 100,
    ports: { '3000/tcp': [{ HostIp: '0.0.0.0', HostPort: '40005' }] }, ...over,
  });
  const at = (port: string) => ({ '3000/tcp': [{ HostIp: '0.0.0.0', HostPort: port }] });
  assert.deepEqual(workerTarget(w({})), { url: 'http://203.0.113.7:40005' });
  assert.deepEqual(workerTarget(w({ ports: at('40099') })), { url: 'http://203.0.113.7:40099' });
  // A private address is a self-hosted fleet's, and allowed; the issue's http://10.66.66.66:22 is refused for its port.
  assert.deepEqual(workerTarget(w({ public_ipaddr: '10.66.66.66' })), { url: 'http://10.66.66.66:40005' });
  for (const port of ['22', '0', '99999', '39999', '40100', '00040005x']) assert.equal(workerTarget(w({ ports: at(port) })), 'refused', port);
  for (const ip of ['0.0.0.0', '255.255.255.255', '224.0.0.1', 'evil.example', '10.66.66.66:22']) assert.equal(workerTarget(w({ public_ipaddr: ip })), 'refused', ip);
  assert.equal(workerTarget(w({ ports: {} })), 'none');
  assert.deepEqual(workerTarget(w({ env: { WORKER_PORT: '8000' }, ports: { '8000/tcp': [{ HostIp: '', HostPort: '40001' }] } })), { url: 'http://203.0.113.7:40001' });
});
