// Threats on the agent protocol's server side: an agent reading or changing another machine's instances, a revoked
// or deleted machine's key still working, a machine key used as an API key (or the reverse), secrets (machine keys,
// instance env values, registry passwords) in the logs or in another agent's replies, credentials stored in clear.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { createLogger } from '../src/platform/logging.js';
import { sha256Hex } from '../src/platform/crypto.js';
import { forEachDialect } from './helpers/harness.js';
import { desired, hostWithMachine, observed, report } from './agent-server-fixtures.js';
import { rentOk, statusOf } from './instances-fixtures.js';

const lines: string[] = [];
const sink = new Writable({
  write(chunk, _enc, done) {
    lines.push(String(chunk));
    done();
  },
});

const ENV_SECRET = 'env-value-s3cr3t-0123456789';
const REGISTRY_PASSWORD = 'registry-pa55word-0123456789';

forEachDialect('agent server security', (app) => {
  test('an agent sees only its own machine: instances, env, registry logins and log requests', async () => {
    const a = await hostWithMachine(app());
    const b = await hostWithMachine(app());
    const renter = await app().createUser();
    const { id, instanceKey } = await rentOk(app(), a.machineId * 100 + 1, {
      image: 'ghcr.io/acme/private:1', env: { TOKEN: ENV_SECRET }, image_login: `-u acme -p ${REGISTRY_PASSWORD} ghcr.io`,
    }, renter.api_key);
    const da = await desired(app(), a);
    assert.deepEqual(da.instances[0].env, { TOKEN: ENV_SECRET, CONTAINER_API_KEY: instanceKey });
    assert.deepEqual(da.instances[0].docker_login, { username: 'acme', password: REGISTRY_PASSWORD, server: 'ghcr.io' });
    const db = await app().request('GET', '/api/v0/agent/desired/', { key: b.machineKey });
    assert.equal(db.status, 200);
    assert.deepEqual(db.body.instances, []);
    assert.ok(!db.raw.includes(ENV_SECRET) && !db.raw.includes(REGISTRY_PASSWORD) && !db.raw.includes(instanceKey));
    // B reports A's instance as running: nothing changes on A's instance.
    await report(app(), b, [observed(id, da.instances[0].boot)], null);
    assert.equal((await statusOf(app(), id, renter.api_key)).actual_status, null);
    // B cannot answer A's log requests.
    await app().request('PUT', `/api/v0/instances/request_logs/${id}/`, { key: renter.api_key, body: {} });
    const [req] = (await desired(app(), a)).log_requests;
    assert.ok(req);
    assert.deepEqual((await desired(app(), b)).log_requests, []);
    const forged = await app().request('PUT', `/api/v0/agent/logs/${req.request_id}/`, { key: b.machineKey, body: { text: 'forged' } });
    assert.equal(forged.status, 404);
    assert.equal(forged.body.error, 'not_found');
    assert.deepEqual((await desired(app(), a)).log_requests.map((r: any) => r.request_id), [req.request_id]);
  });

  test('a machine key opens only the agent routes, and an API key none of them', async () => {
    const a = await hostWithMachine(app());
    const asApi = await app().request('GET', '/api/v0/instances/', { key: a.machineKey });
    assert.equal(asApi.status, 401);
    const register = await app().request('POST', '/api/v0/machines/register/', { key: a.machineKey, body: {} });
    assert.equal(register.status, 401);
    for (const key of [a.apiKey, app().ownerKey, null, 'gpm_not-a-real-key-0123456789']) {
      const r = await app().request('PUT', '/api/v0/agent/status/', { key, body: { agent_version: '1', desired_version: null, observed: [] } });
      assert.equal(r.status, 401, `key ${key}`);
      assert.equal(r.body.error, 'auth_error');
      assert.equal(r.body.success, false);
    }
    // Every machine-key route (the sweep of auth.security.test.ts leaves them to this file).
    const agentRoutes = app().routes.filter((r) => r.url.startsWith('/api/v0/agent/'));
    assert.deepEqual([...new Set(agentRoutes.map((r) => r.url))].sort(), [
      '/api/v0/agent/commands/:request/', '/api/v0/agent/desired/', '/api/v0/agent/logs/:request/', '/api/v0/agent/snapshots/:request/', '/api/v0/agent/status/',
    ]);
    const bodies: Record<string, unknown> = { commands: { output: '', exit_code: 0 }, snapshots: {} };
    for (const route of agentRoutes) {
      const url = route.url.replace(':request', 'log_0123456789');
      for (const [key, headers] of [[null, {}], [null, { authorization: 'Basic abc' }], [a.apiKey, {}], [`${a.machineKey}x`, {}]] as const) {
        const kind = url.split('/')[4];
        const body = url.includes('/status/') ? { agent_version: '1', desired_version: null, observed: [] } : url.includes('/logs/') ? { text: '' } : bodies[kind];
        const r = await app().request(route.method, url, { key, headers, body });
        assert.equal(r.status, 401, `${route.method} ${url}`);
        assert.equal(r.body.error, 'auth_error');
      }
    }
  });

  test('a revoked key (the machine deleted) is refused; the credential is stored only as a hash', async () => {
    const a = await hostWithMachine(app());
    const row = await app().store.db.selectFrom('agent_machines').selectAll().where('machine_id', '=', a.machineId).executeTakeFirstOrThrow();
    assert.equal(row.key_hash, sha256Hex(a.machineKey));
    assert.ok(!JSON.stringify(row).includes(a.machineKey));
    assert.equal((await app().request('GET', '/api/v0/agent/desired/', { key: a.machineKey })).status, 200);
    // The host deletes the machine (vastai delete machine): its agent's key is refused from then on.
    const del = await app().request('POST', `/api/v0/machines/${a.machineId}/force_delete/`, { key: a.apiKey, body: {} });
    assert.equal(del.status, 200, del.raw);
    const r = await app().request('GET', '/api/v0/agent/desired/', { key: a.machineKey });
    assert.equal(r.status, 401);
    assert.equal(r.body.error, 'auth_error');
  });

  test('status reports and desired-state bodies are validated: a bad one is 400 naming the field, never a 500', async () => {
    const a = await hostWithMachine(app());
    const bad = [
      { agent_version: '1', desired_version: null, observed: [{ instance_id: 1 }] },
      { agent_version: '1', desired_version: null, observed: [], extra: 1 },
      { agent_version: '1', desired_version: -1, observed: [] },
    ];
    for (const body of bad) {
      const r = await app().request('PUT', '/api/v0/agent/status/', { key: a.machineKey, body });
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.body.error, 'bad_request');
    }
    const q = await app().request('GET', '/api/v0/agent/desired/', { key: a.machineKey, query: { wait: '61' } });
    assert.equal(q.status, 400);
    const unknown = await app().request('GET', '/api/v0/agent/desired/', { key: a.machineKey, query: { machine_id: '1' } });
    assert.equal(unknown.status, 400);
  });

  test('machine keys, env values and registry passwords never reach the logs', async () => {
    const a = await hostWithMachine(app());
    const renter = await app().createUser();
    const { id } = await rentOk(app(), a.machineId * 100 + 1, {
      image: 'ghcr.io/acme/private:1', env: { TOKEN: ENV_SECRET }, image_login: `-u acme -p ${REGISTRY_PASSWORD} ghcr.io`,
    }, renter.api_key);
    const d = await desired(app(), a);
    await report(app(), a, [observed(id, d.instances[0].boot)], d.version);
    await app().request('GET', '/api/v0/agent/desired/', { key: `${a.machineKey}x` });
    const all = lines.join('');
    assert.ok(lines.length > 0, 'the app logged its requests');
    for (const secret of [a.machineKey, ENV_SECRET, REGISTRY_PASSWORD, a.apiKey]) assert.ok(!all.includes(secret), `a secret is in the logs: ${secret.slice(0, 6)}…`);
  });
}, { log: await createLogger({ level: 'trace', format: 'json', destination: sink }) });
