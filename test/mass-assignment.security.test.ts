// Threat: mass assignment. A body key that names an owner or system column (`user_id`, `team_id`, `id`, `load`,
// `created_at` …) written onto the row would give a resource away, plant it in a team the caller is not in, or
// forge the server's counters and times; a key named after an `Object.prototype` member (`constructor`, `__proto__`,
// `toString`) found by an `in` check crashed the update with a 500 (issue 11). Every such key is a 400 that names it,
// and the row stays as it was, on every route that reads a body.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { forEachDialect, type Reply, type TestApp } from './helpers/harness.js';
import { addMachine, offerFor, rentOk } from './instances-fixtures.js';
import { RESERVED_BODY_KEYS } from '../src/platform/validation.js';
import { OFFER_ID_STRIDE } from '../src/machines/machines-offers-contract.js';

/** Body keys the tests below send onto rows, and the values an attacker would pick. */
const PROTOTYPE_KEYS = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'];

/** Sends a body as raw JSON text: `__proto__` must arrive as a key, as it would from any client. */
function put(app: TestApp, method: string, url: string, key: string | null, json: string): Promise<Reply> {
  return app.request(method, url, { key, body: json, headers: { 'content-type': 'application/json' } });
}

function assertRefused(res: Reply, field: string): void {
  assert.equal(res.status, 400, `${field}: ${res.raw}`);
  assert.equal(res.body.success, false);
  assert.equal(res.body.error, 'bad_request');
  assert.ok(res.body.msg.includes(`body.${field} `), `the message names body.${field}: ${res.body.msg}`);
}

/** An OpenSSH ed25519 public key line (length-prefixed type name and key bytes, RFC 4253 §6.6). */
function pubKey(seed: string): string {
  const str = (b: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, b.length]), b]);
  const blob = Buffer.concat([str(Buffer.from('ssh-ed25519')), str(createHash('sha256').update(seed).digest())]);
  return `ssh-ed25519 ${blob.toString('base64')} ${seed}@example`;
}

async function endpointsOf(app: TestApp, key: string): Promise<any[]> {
  const res = await app.request('GET', '/api/v0/endptjobs/', { key });
  assert.equal(res.status, 200, res.raw);
  return res.body.results;
}

async function teamOf(app: TestApp, key: string, name: string): Promise<number> {
  const res = await app.request('POST', '/api/v0/team/', { key, body: { team_name: name } });
  assert.equal(res.status, 200, res.raw);
  return res.body.id;
}

forEachDialect('mass assignment', (app) => {
  test('PUT /endptjobs/{id}/: owner and system columns and prototype keys are 400s naming them; the endpoint is unchanged', async () => {
    const a = await app().createUser();
    const b = await app().createUser();
    const foreignTeam = await teamOf(app(), b.api_key, `foreign-${Date.now()}`);
    const created = await app().request('POST', '/api/v0/endptjobs/', { key: a.api_key, body: { endpoint_name: 'mine' } });
    assert.equal(created.status, 200, created.raw);
    const id = created.body.result;
    const [before] = await endpointsOf(app(), a.api_key);
    const url = `/api/v0/endptjobs/${id}/`;

    const attacks: Array<[string, unknown]> = [
      ['user_id', b.user.id], ['team_id', foreignTeam], ['load', 1000], ['created_at', 1], ['deleted_at', 1], ['id', id + 1000],
    ];
    for (const [field, value] of attacks) assertRefused(await put(app(), 'PUT', url, a.api_key, JSON.stringify({ [field]: value })), field);
    for (const field of PROTOTYPE_KEYS) assertRefused(await put(app(), 'PUT', url, a.api_key, `{"${field}": 5}`), field);
    // A key the clients never send is refused too: the body is closed to the endpoint's fields and the clients' keys.
    assertRefused(await put(app(), 'PUT', url, a.api_key, JSON.stringify({ api_key: 'x' })), 'api_key');

    assert.deepEqual(await endpointsOf(app(), a.api_key), [before], 'the endpoint is unchanged and still the owner\'s');
    assert.deepEqual(await endpointsOf(app(), b.api_key), []);

    // What the vastai client sends for `update endpoint` (api/endpoints.py): accepted, the settings applied.
    const client = {
      client_id: 'me', endptjob_id: id, min_load: 3, min_cold_load: null, target_util: null, cold_mult: null, cold_workers: 2,
      max_workers: 7, endpoint_name: 'renamed', endpoint_state: null, autoscaler_instance: 'prod', max_queue_time: 30,
      target_queue_time: null, inactivity_timeout: null,
    };
    const ok = await app().request('PUT', url, { key: a.api_key, body: client });
    assert.equal(ok.status, 200, ok.raw);
    const [after] = await endpointsOf(app(), a.api_key);
    assert.deepEqual(
      [after.min_load, after.cold_workers, after.max_workers, after.endpoint_name, after.max_queue_time, after.target_util],
      [3, 2, 7, 'renamed', 30, before.target_util],
    );
    assert.deepEqual([after.id, after.user_id, after.team_id, after.load, after.created_at], [before.id, before.user_id, before.team_id, before.load, before.created_at]);
    // The id the client repeats must be the path's.
    assertRefused(await app().request('PUT', url, { key: a.api_key, body: { endptjob_id: id + 1, max_workers: 9 } }), 'endptjob_id');
    assert.equal((await endpointsOf(app(), a.api_key))[0].max_workers, 7);
  });

  test('POST /endptjobs/: owner and system columns are refused on create', async () => {
    const a = await app().createUser();
    const b = await app().createUser();
    for (const [field, value] of [['user_id', b.user.id], ['load', 1000], ['created_at', 1], ['id', 5]] as const) {
      assertRefused(await put(app(), 'POST', '/api/v0/endptjobs/', a.api_key, JSON.stringify({ endpoint_name: 'x', [field]: value })), field);
    }
    assert.deepEqual(await endpointsOf(app(), a.api_key), []);
    assert.deepEqual(await endpointsOf(app(), b.api_key), []);
  });

  test('PUT /autojobs/{id}/: owner and system columns are refused; the workergroup is unchanged', async () => {
    await addMachine(app(), { gpu_name: 'RTX 4090' });
    const a = await app().createUser({ credit: 1000 });
    const b = await app().createUser();
    const tpl = await app().request('POST', '/api/v0/template/', {
      key: a.api_key, body: { name: 'w', image: 'vllm/vllm-openai', docker_login_repo: '', docker_login_user: '', docker_login_pass: '' },
    });
    const ep = await app().request('POST', '/api/v0/endptjobs/', { key: a.api_key, body: { endpoint_name: 'wg-ep', cold_workers: 0, max_workers: 1 } });
    const wg = await app().request('POST', '/api/v0/autojobs/', {
      key: a.api_key, body: { endpoint_id: ep.body.result, template_hash: tpl.body.template.hash_id, search_params: 'gpu_name=RTX_4090', test_workers: 0 },
    });
    assert.equal(wg.status, 200, wg.raw);
    const list = async (key: string) => (await app().request('GET', '/api/v0/autojobs/', { key })).body.results.map((w: any) => ({ ...w, workers: undefined }));
    const before = await list(a.api_key);
    const url = `/api/v0/autojobs/${wg.body.id}/`;
    for (const [field, value] of [['user_id', b.user.id], ['team_id', 1], ['created_at', 1], ['deleted_at', 1], ['id', 99]] as const) {
      assertRefused(await put(app(), 'PUT', url, a.api_key, JSON.stringify({ [field]: value })), field);
    }
    for (const field of PROTOTYPE_KEYS) assertRefused(await put(app(), 'PUT', url, a.api_key, `{"${field}": 5}`), field);
    assertRefused(await app().request('PUT', url, { key: a.api_key, body: { autojob_id: wg.body.id + 1 } }), 'autojob_id');
    assert.deepEqual(await list(a.api_key), before);
    assert.deepEqual(await list(b.api_key), []);
    const ok = await app().request('PUT', url, { key: a.api_key, body: { client_id: 'me', autojob_id: wg.body.id, test_workers: 1, min_load: null } });
    assert.equal(ok.status, 200, ok.raw);
  });

  test('PUT /template/ (edit): owner and system columns are refused; the template is unchanged', async () => {
    const a = await app().createUser();
    const b = await app().createUser();
    const login = { docker_login_repo: '', docker_login_user: '', docker_login_pass: '' };
    const t = await app().request('POST', '/api/v0/template/', { key: a.api_key, body: { name: 'mine', image: 'ubuntu', ...login } });
    assert.equal(t.status, 200, t.raw);
    const hash = t.body.template.hash_id;
    for (const [field, value] of [['user_id', b.user.id], ['team_id', 1], ['creator_id', b.user.id], ['count_created', 99], ['created_at', 1], ['id', 1], ['version', 9]] as const) {
      assertRefused(await put(app(), 'PUT', '/api/v0/template/', a.api_key, JSON.stringify({ hash_id: hash, name: 'stolen', [field]: value })), field);
    }
    for (const field of PROTOTYPE_KEYS) assertRefused(await put(app(), 'PUT', '/api/v0/template/', a.api_key, `{"hash_id": "${hash}", "${field}": 1}`), field);
    const search = await app().request('GET', '/api/v0/template/', { key: a.api_key, query: { select_filters: JSON.stringify({ hash_id: { eq: hash } }) } });
    assert.deepEqual(search.body.templates, [t.body.template], 'the template is unchanged');
  });

  test('PUT /instances/{id}/: owner and system columns are refused; the instance stays the owner\'s', async () => {
    const m = await addMachine(app());
    const a = await app().createUser({ credit: 1000 });
    const b = await app().createUser();
    const { id } = await rentOk(app(), offerFor(m, 1), { label: 'before' }, a.api_key);
    for (const [field, value] of [['user_id', b.user.id], ['team_id', 1], ['id', id + 1], ['created_at', 1]] as const) {
      assertRefused(await put(app(), 'PUT', `/api/v0/instances/${id}/`, a.api_key, JSON.stringify({ label: 'after', [field]: value })), field);
    }
    const shown = await app().request('GET', `/api/v0/instances/${id}/`, { key: a.api_key });
    assert.equal(shown.body.instances.label, 'before');
    assert.equal((await app().request('GET', `/api/v0/instances/${id}/`, { key: b.api_key })).body.instances, null);
  });

  test('PUT /ssh/{id}/: the repeated id must be the path\'s; user_id is refused; the key is unchanged', async () => {
    const a = await app().createUser();
    const b = await app().createUser();
    const key1 = pubKey(`one-${Date.now()}`);
    const key2 = pubKey(`two-${Date.now()}`);
    const created = await app().request('POST', '/api/v0/ssh/', { key: a.api_key, body: { ssh_key: key1 } });
    assert.equal(created.status, 200, created.raw);
    const id = created.body.key.id;
    assertRefused(await app().request('PUT', `/api/v0/ssh/${id}/`, { key: a.api_key, body: { id: id + 1, ssh_key: key2 } }), 'id');
    assertRefused(await app().request('PUT', `/api/v0/ssh/${id}/`, { key: a.api_key, body: { ssh_key: key2, user_id: b.user.id } }), 'user_id');
    const mine = await app().request('GET', '/api/v0/ssh/', { key: a.api_key });
    assert.deepEqual(mine.body.map((k: any) => [k.id, k.user_id, k.ssh_key]), [[id, a.user.id, key1]]);
    assert.deepEqual((await app().request('GET', '/api/v0/ssh/', { key: b.api_key })).body, []);
    // What the vastai client sends (api/keys.py update_ssh_key): the id repeated, equal to the path's.
    const ok = await app().request('PUT', `/api/v0/ssh/${id}/`, { key: a.api_key, body: { id, ssh_key: key2 } });
    assert.equal(ok.status, 200, ok.raw);
    assert.equal(ok.body.key.ssh_key, key2);
  });

  test('PUT /team/roles/{id}/: team_id and id are refused; the role stays in its team', async () => {
    const a = await app().createUser();
    const b = await app().createUser();
    await teamOf(app(), a.api_key, `roles-a-${Date.now()}`);
    const other = await teamOf(app(), b.api_key, `roles-b-${Date.now()}`);
    const role = await app().request('POST', '/api/v0/team/roles/', { key: a.api_key, body: { name: 'viewer', permissions: { api: { misc: {} } } } });
    assert.equal(role.status, 200, role.raw);
    const id = role.body.id;
    for (const [field, value] of [['team_id', other], ['id', id + 1], ['is_owner', 1], ['created_at', 1]] as const) {
      const res = await put(app(), 'PUT', `/api/v0/team/roles/${id}/`, a.api_key, JSON.stringify({ name: 'renamed', [field]: value }));
      if (field === 'is_owner') {
        // Not a reserved name: ignored, and the role stays an ordinary one.
        assert.equal(res.status, 200, res.raw);
        continue;
      }
      assertRefused(res, field);
    }
    const shown = await app().request('GET', '/api/v0/team/roles/renamed/', { key: a.api_key });
    assert.equal(shown.status, 200, shown.raw);
    assert.equal(shown.body.id, id);
    assert.equal((await app().request('GET', '/api/v0/team/roles/renamed/', { key: b.api_key })).status, 404);
    assert.equal((await app().request('DELETE', '/api/v0/team/roles/renamed/', { key: a.api_key })).status, 200, 'still an ordinary role of team a');
  });

  test('PUT /volumes/ (create), POST /auth/apikeys/, PUT /tfa/update/, POST /users/: owner and system columns are refused', async () => {
    const a = await app().createUser();
    const b = await app().createUser();
    const m = await addMachine(app());
    assertRefused(await put(app(), 'PUT', '/api/v0/volumes/', a.api_key, JSON.stringify({ id: m.machine_id * OFFER_ID_STRIDE, size: 10, user_id: b.user.id })), 'user_id');
    assert.deepEqual((await app().request('GET', '/api/v0/volumes/', { key: b.api_key })).body.volumes, []);

    assertRefused(await put(app(), 'POST', '/api/v0/auth/apikeys/', a.api_key, JSON.stringify({ name: 'k', user_id: b.user.id })), 'user_id');
    assertRefused(await put(app(), 'POST', '/api/v0/auth/apikeys/', a.api_key, JSON.stringify({ name: 'k', key_hash: 'x' })), 'key_hash');
    const keysOfB = await app().request('GET', '/api/v0/auth/apikeys/', { key: b.api_key });
    assert.equal(keysOfB.status, 200, keysOfB.raw);
    const countOfB = JSON.stringify(keysOfB.body);

    for (const field of ['user_id', 'fail_count', 'locked_until', 'created_at']) {
      assertRefused(await put(app(), 'PUT', '/api/v0/tfa/update/', a.api_key, JSON.stringify({ tfa_method: 'totp', label: 'x', [field]: 0 })), field);
    }
    for (const [field, value] of [['is_admin', true], ['credit', 1e6], ['email_verified_at', 1], ['tfa_status', 'disabled']] as const) {
      assertRefused(
        await put(app(), 'POST', '/api/v0/users/', null, JSON.stringify({ email: `ma-${field}-${Date.now()}@example.com`, password: 'long enough password 1', [field]: value })),
        field,
      );
    }
    assert.equal(JSON.stringify((await app().request('GET', '/api/v0/auth/apikeys/', { key: b.api_key })).body), countOfB);
  });

  test('a __proto__ key at any depth, escaped or not, is a 400 naming its path', async () => {
    const cases: Array<[string, string]> = [
      ['{"__proto__": {"is_admin": true}}', 'body.__proto__'],
      ['{"min_load": 1, "x": {"__proto__": {"user_id": 1}}}', 'body.x.__proto__'],
      ['{"a": [{"b": 1}, {"\\u005f_proto__": {"user_id": 1}}]}', 'body.a[1].__proto__'],
    ];
    for (const [json, path] of cases) {
      const res = await put(app(), 'POST', '/api/v0/endptjobs/', app().ownerKey, json);
      assert.equal(res.status, 400, res.raw);
      assert.equal(res.body.error, 'bad_request');
      assert.equal(res.body.msg, `${path} is not an allowed field`);
    }
    assert.equal(({} as Record<string, unknown>).is_admin, undefined, 'no prototype was touched');
  });

  test('every route that reads a body refuses every reserved key it does not declare, naming it; none answers 5xx', async () => {
    const failures: string[] = [];
    for (const r of app().routes) {
      if (r.method === 'GET' || r.method === 'HEAD') continue;
      // An id that names no row: the sweep must not act on a real one (DELETE /auth/apikeys/1/ is the owner's key).
      const url = r.url.replace(/:(\w+)/g, '999999999');
      for (const field of RESERVED_BODY_KEYS) {
        const res = await put(app(), r.method, url, app().ownerKey, `{"${field}": 1}`);
        const where = `${r.method} ${r.url} {${field}} -> ${res.status} ${res.raw.slice(0, 120)}`;
        // A 503 `service_unavailable` answers a well-formed body the server cannot act on, saying what it lacks
        // (network-routes.ts: `{"id": 1}` is a whole unlist network-volume body): not a fault.
        if (res.status >= 500 && !(res.status === 503 && res.body?.error === 'service_unavailable')) failures.push(where);
        else if (r.bodyFields !== null && !r.bodyFields.includes(field)) {
          if (res.status !== 400 || !String(res.body.msg).includes(`body.${field} `)) failures.push(`${where} (expected a 400 naming body.${field})`);
        }
      }
    }
    assert.deepEqual(failures, []);
  });
});
