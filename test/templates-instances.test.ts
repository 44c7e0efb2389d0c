// Templates used at instance creation, through HTTP (spec: Create instance rules 1-4 and 7; a template's
// volume_info attaches nothing; count_created / recent_create_date kept up to date; private templates).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { addMachine, offerFor, rent, rentOk } from './instances-fixtures.js';

const login = { docker_login_repo: '', docker_login_user: '', docker_login_pass: '' };

forEachDialect('templates at instance creation', (app) => {
  async function template(body: Record<string, unknown>, key?: string) {
    const res = await app().request('POST', '/api/v0/template/', { key, body: { name: 'ti', image: 'ubuntu', ...login, ...body } });
    assert.equal(res.status, 200, res.raw);
    return res.body.template;
  }
  const byId = async (id: number) =>
    (await app().request('GET', `/api/v0/template/?select_filters=${encodeURIComponent(JSON.stringify({ id: { eq: id } }))}`)).body.templates[0];

  test('each creation from a template bumps count_created and sets recent_create_date to the creation time', async () => {
    const m = await addMachine(app(), { num_gpus: 4 });
    const t = await template({ name: 'counted', private: false });
    const at = app().clock.now();
    await rentOk(app(), offerFor(m, 1), { image: null, template_hash_id: t.hash_id });
    await app().advance(30);
    await rentOk(app(), offerFor(m, 1), { image: null, template_hash_id: t.hash_id });
    const after = await byId(t.id);
    assert.equal(after.count_created, 2);
    assert.equal(after.recent_create_date, at + 30);
  });

  test("a template's volume_info is a UI hint: creation attaches nothing and does not fail on it", async () => {
    const m = await addMachine(app());
    const t = await template({ name: 'with-volume-hint', volume_info: { volume_id: 424242, mount_path: '/data', create_new: false } });
    const res = await rent(app(), offerFor(m, 1), { image: null, template_hash_id: t.hash_id });
    assert.equal(res.status, 200, res.raw);
  });

  test("someone else's private template and an edited-away hash_id are 404 at creation; a public one works", async () => {
    const m = await addMachine(app(), { num_gpus: 4 });
    const other = await app().createUser({ credit: 1000 });
    const priv = await template({ name: 'owner-private', private: true });
    const pub = await template({ name: 'owner-public', private: false });
    const denied = await rent(app(), offerFor(m, 1), { image: null, template_hash_id: priv.hash_id }, other.api_key);
    assert.equal(denied.status, 404, denied.raw);
    assert.equal(denied.body.error, 'not_found');
    const allowed = await rent(app(), offerFor(m, 1), { image: null, template_hash_id: pub.hash_id }, other.api_key);
    assert.equal(allowed.status, 200, allowed.raw);

    const edited = await app().request('PUT', '/api/v0/template/', { body: { hash_id: pub.hash_id, desc: 'v2' } });
    assert.equal(edited.status, 200);
    const stale = await rent(app(), offerFor(m, 1), { image: null, template_hash_id: pub.hash_id });
    assert.equal(stale.status, 404);
    const fresh = await rent(app(), offerFor(m, 1), { image: null, template_hash_id: edited.body.template.hash_id });
    assert.equal(fresh.status, 200, fresh.raw);
  });
});
