// Threats: an instance key (CONTAINER_API_KEY, readable by anything in the container) reaching beyond its own
// instance; one tenant reading or changing another's instances; scoped keys exceeding their categories; a copy of
// the database (a backup, a dump) giving instance keys away through the Idempotency-Key records.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { addMachine, offerFor, rent, rentOk } from './instances-fixtures.js';
import { SecretBox } from '../src/platform/crypto.js';
import { cryptoRandom } from '../src/platform/random.js';
import { instancesIdempotencySealedMigration } from '../src/migrations/0025-instances-idempotency-sealed.js';

forEachDialect('instances: security', (app) => {
  test('the instance key can stop, start and destroy its own instance', async () => {
    const m = await addMachine(app());
    const { id, instanceKey } = await rentOk(app(), offerFor(m, 1));
    assert.equal((await app().request('PUT', `/api/v0/instances/${id}/`, { key: instanceKey, body: { state: 'stopped' } })).status, 200);
    assert.equal((await app().request('PUT', `/api/v0/instances/${id}/`, { key: instanceKey, body: { state: 'running' } })).status, 200);
    assert.equal((await app().request('DELETE', `/api/v0/instances/${id}/`, { key: instanceKey })).status, 200);
  });

  test('the instance key is 403 on another instance (even the same owner\'s) and on every other route', async () => {
    const m = await addMachine(app(), { num_gpus: 2 });
    const a = await rentOk(app(), offerFor(m, 1));
    const b = await rentOk(app(), offerFor(m, 1));
    const k = a.instanceKey;
    const cases: [string, string, unknown?][] = [
      ['PUT', `/api/v0/instances/${b.id}/`, { state: 'stopped' }],
      ['DELETE', `/api/v0/instances/${b.id}/`],
      ['PUT', `/api/v0/instances/${a.id}/`, { label: 'pwned' }],
      ['GET', `/api/v0/instances/${a.id}/`],
      ['GET', '/api/v0/instances/'],
      ['GET', '/api/v1/instances/'],
      ['PUT', '/api/v0/instances/', { state: 'stopped', ids: [a.id] }],
      ['PUT', `/api/v0/asks/${offerFor(m, 1)}/`, { image: 'x' }],
      ['PUT', `/api/v0/instances/request_logs/${a.id}/`, {}],
      ['POST', `/api/v0/instances/${a.id}/ssh/`, { ssh_key: 'ssh-ed25519 AAAA x' }],
      ['GET', '/api/v0/users/current/'],
    ];
    for (const [method, url, body] of cases) {
      const res = await app().request(method, url, { key: k, body });
      assert.equal(res.status, 403, `${method} ${url}: ${res.raw}`);
      assert.equal(res.body.error, 'permission_denied');
    }
    const inst = await app().request('GET', `/api/v0/instances/${b.id}/`);
    assert.equal(inst.body.instances.intended_status, 'running', 'b untouched');
  });

  test('another user\'s instance is 404 on every route (its existence is not revealed)', async () => {
    const m = await addMachine(app());
    const { id } = await rentOk(app(), offerFor(m, 1));
    const { api_key } = await app().createUser();
    // Another's instance answers as a missing one, and says nothing of it: show is `{"instances": null}` and a
    // destroy `no_such_instance`, as for an id that never existed (issue 29 item 2).
    const shown = await app().request('GET', `/api/v0/instances/${id}/`, { key: api_key });
    assert.equal(shown.status, 200, shown.raw);
    assert.deepEqual(shown.body, { instances: null });
    const destroyed = await app().request('DELETE', `/api/v0/instances/${id}/`, { key: api_key });
    assert.equal(destroyed.status, 404, destroyed.raw);
    assert.deepEqual(destroyed.body, { success: false, error: 'no_such_instance', msg: `instance ${id} not found` });
    const cases: [string, string, unknown?][] = [
      ['PUT', `/api/v0/instances/${id}/`, { state: 'stopped' }],
      ['PUT', `/api/v0/instances/${id}/`, { label: 'mine now' }],
      ['PUT', `/api/v0/instances/bid_price/${id}/`, { price: 9 }],
      ['PUT', `/api/v0/instances/request_logs/${id}/`, {}],
      ['GET', `/api/v0/instances/${id}/wait/?timeout=1`],
      ['POST', `/api/v0/instances/${id}/ssh/`, { ssh_key: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl a@b' }],
      ['GET', `/api/v0/instances/${id}/ssh/`],
    ];
    for (const [method, url, body] of cases) {
      const res = await app().request(method, url, { key: api_key, body });
      assert.equal(res.status, 404, `${method} ${url}: ${res.raw}`);
      assert.equal(res.body.error, 'not_found');
    }
    const mine = await app().request('GET', `/api/v0/instances/${id}/`);
    assert.equal(mine.body.instances.label, null);
    assert.equal(mine.body.instances.intended_status, 'running');
  });

  test('a read-only scoped key can list but not rent, stop or destroy', async () => {
    const m = await addMachine(app());
    const { id } = await rentOk(app(), offerFor(m, 1));
    const made = await app().request('POST', '/api/v0/auth/apikeys/', { body: { name: 'ro', permissions: { api: { instance_read: {} } } } });
    assert.equal(made.status, 200, made.raw);
    const ro = made.body.key ?? made.body.api_key ?? made.body.secret;
    assert.equal(typeof ro, 'string', made.raw);
    assert.equal((await app().request('GET', `/api/v0/instances/${id}/`, { key: ro })).status, 200);
    assert.equal((await rent(app(), offerFor(m, 1), {}, ro)).status, 403);
    assert.equal((await app().request('PUT', `/api/v0/instances/${id}/`, { key: ro, body: { state: 'stopped' } })).status, 403);
    assert.equal((await app().request('DELETE', `/api/v0/instances/${id}/`, { key: ro })).status, 403);
  });

  test('Idempotency-Key replies are per user: another user\'s key value never returns someone else\'s instance key', async () => {
    const m = await addMachine(app(), { num_gpus: 2 });
    const a = await app().createUser();
    const b = await app().createUser();
    const headers = { 'idempotency-key': 'shared-value' };
    const ra = await rent(app(), offerFor(m, 1), {}, a.api_key, headers);
    const rb = await rent(app(), offerFor(m, 1), {}, b.api_key, headers);
    assert.equal(ra.status, 200);
    assert.equal(rb.status, 200, rb.raw);
    assert.notEqual(rb.body.instance_api_key, ra.body.instance_api_key);
    assert.notEqual(rb.body.new_contract, ra.body.new_contract);
  });

  test('an Idempotency-Key record holds no clear instance key; the retry still gets the first key', async () => {
    const m = await addMachine(app(), { num_gpus: 2 });
    const { api_key } = await app().createUser();
    const headers = { 'idempotency-key': 'sealed-record-1' };
    const first = await rent(app(), offerFor(m, 1), {}, api_key, headers);
    assert.equal(first.status, 200, first.raw);
    const key: string = first.body.instance_api_key;
    const rows = await app().store.db.selectFrom('instance_idempotency').selectAll().where('idem_key', '=', 'sealed-record-1').execute();
    assert.equal(rows.length, 1);
    assert.ok(!JSON.stringify(rows[0]).includes(key), 'the stored record contains the key in clear');
    const record = JSON.parse(rows[0].reply);
    assert.deepEqual(Object.keys(record).sort(), ['instance_api_key_sealed', 'new_contract']);
    const again = await rent(app(), offerFor(m, 1), {}, api_key, headers);
    assert.equal(again.status, 200, again.raw);
    assert.deepEqual(again.body, first.body);
    const stop = await app().request('PUT', `/api/v0/instances/${first.body.new_contract}/`, { key: again.body.instance_api_key, body: { state: 'stopped' } });
    assert.equal(stop.status, 200, 'the key given again works on its instance');
  });

  test('an Idempotency-Key record sealed under another secret key is a 409 naming the instance, never a 500', async () => {
    const m = await addMachine(app(), { num_gpus: 2 });
    const { api_key } = await app().createUser();
    const headers = { 'idempotency-key': 'sealed-record-2' };
    const first = await rent(app(), offerFor(m, 1), {}, api_key, headers);
    assert.equal(first.status, 200, first.raw);
    const other = new SecretBox('another secret key', cryptoRandom);
    const reply = JSON.stringify({ new_contract: first.body.new_contract, instance_api_key_sealed: other.seal(first.body.instance_api_key) });
    await app().store.db.updateTable('instance_idempotency').set({ reply }).where('idem_key', '=', 'sealed-record-2').execute();
    const again = await rent(app(), offerFor(m, 1), {}, api_key, headers);
    assert.equal(again.status, 409, again.raw);
    assert.equal(again.body.error, 'conflict');
    assert.ok(again.body.msg.includes(`instance ${first.body.new_contract}`), again.body.msg);
    assert.ok(!again.raw.includes(first.body.instance_api_key));
  });

  test('the upgrade deletes Idempotency-Key records written with the key in clear, and only those', async () => {
    const m = await addMachine(app(), { num_gpus: 2 });
    const { api_key } = await app().createUser();
    const sealed = await rent(app(), offerFor(m, 1), {}, api_key, { 'idempotency-key': 'sealed-record-3' });
    assert.equal(sealed.status, 200, sealed.raw);
    const db = app().store.db;
    const clear = JSON.stringify({ success: true, new_contract: 1, instance_api_key: 'gpk_clear' });
    await db.insertInto('instance_idempotency').values({ user_id: 1, idem_key: 'old-clear-record', request_hash: 'x', reply: clear, created_at: 0 }).execute();
    await instancesIdempotencySealedMigration(app().store.dialect).up(db);
    const keys = (await db.selectFrom('instance_idempotency').select('idem_key').execute()).map((r) => r.idem_key);
    assert.ok(keys.includes('sealed-record-3'));
    assert.ok(!keys.includes('old-clear-record'));
  });

  test('the instance key and image_login never appear in instance objects or logs', async () => {
    const m = await addMachine(app());
    const res = await rent(app(), offerFor(m, 1), { image_login: '-u alice -p s3cr3t-token registry.example.com' });
    assert.equal(res.status, 200, res.raw);
    const id = res.body.new_contract;
    const shown = await app().request('GET', `/api/v0/instances/${id}/`);
    assert.ok(!shown.raw.includes(res.body.instance_api_key));
    assert.ok(!shown.raw.includes('s3cr3t-token'));
    const listed = await app().request('GET', '/api/v0/instances/');
    assert.ok(!listed.raw.includes('s3cr3t-token'));
    const logs = await app().request('PUT', `/api/v0/instances/request_logs/${id}/`, { body: {} });
    const text = await app().request('GET', logs.body.result_url.slice(app().config.publicUrl.length), { key: null });
    assert.ok(!text.raw.includes('s3cr3t-token'));
    assert.ok(!text.raw.includes(res.body.instance_api_key));
  });
});
