// Behaviour of templates (spec: Template, Templates operations, additional search fields; contract §6;
// client-compat: Templates), through HTTP on every database.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, T0, type TestApp } from './helpers/harness.js';

/** Exactly what `vastai create template` sends (every key, nulls for unset, disk as a string). */
function clientCreateBody(overrides: Record<string, unknown> = {}) {
  return {
    name: 'tgi-llama2', image: 'ghcr.io/huggingface/text-generation-inference', tag: null, href: null, repo: null,
    env: "-p 3000:3000 -e MODEL_ARGS='--model-id TheBloke/Llama-2-7B-chat-GPTQ --quantize gptq'",
    onstart: 'echo start', jup_direct: false, ssh_direct: true, use_jupyter_lab: false, runtype: 'ssh', use_ssh: true,
    jupyter_dir: null, docker_login_repo: null,
    extra_filters: { verified: { eq: true }, external: { eq: false }, rentable: { eq: true }, rented: { eq: false }, gpu_ram: { gte: 23000.0 } },
    recommended_disk_space: '8.0', readme: null, readme_visible: true, desc: null, private: true,
    ...overrides,
  };
}

const minimal = (overrides: Record<string, unknown> = {}) => ({
  name: 'min', image: 'ubuntu', docker_login_repo: '', docker_login_user: '', docker_login_pass: '', ...overrides,
});

async function create(app: TestApp, body: Record<string, unknown>, key?: string) {
  const res = await app.request('POST', '/api/v0/template/', { body, key });
  assert.equal(res.status, 200, res.raw);
  return res.body.template;
}

async function search(app: TestApp, filters: unknown, key?: string) {
  const q = encodeURIComponent(JSON.stringify(filters));
  return app.request('GET', `/api/v0/template/?select_cols=${encodeURIComponent('["*"]')}&select_filters=${q}`, { key });
}

forEachDialect('templates', (app) => {
  test('create with the vastai client body: 200 {success, template} with id, 32-hex hash_id and the fields', async () => {
    const res = await app().request('POST', '/api/v0/template/', { body: clientCreateBody() });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.success, true);
    const t = res.body.template;
    assert.equal(typeof t.id, 'number');
    assert.match(t.hash_id, /^[0-9a-f]{32}$/);
    assert.equal(t.name, 'tgi-llama2');
    assert.equal(t.image, 'ghcr.io/huggingface/text-generation-inference');
    assert.equal(t.tag, 'latest', 'tag null → default latest');
    assert.equal(t.recommended_disk_space, 8, '"8.0" coerced to a number');
    assert.equal(t.runtype, 'ssh');
    assert.equal(t.ssh_direct, true);
    assert.equal(t.private, true);
    assert.deepEqual(t.extra_filters.gpu_ram, { gte: 23000 });
    assert.equal(t.env, clientCreateBody().env);
    assert.equal(t.docker_login_repo, '');
    assert.equal(t.count_created, 0);
    assert.equal(t.recent_create_date, null);
    assert.equal(t.created_at, T0);
    assert.equal(t.default_tag, 'latest');
    assert.equal(t.recommended, false);
    const me = await app().request('GET', '/api/v0/users/current');
    assert.equal(t.creator_id, me.body.id);
  });

  test('defaults: tag latest, runtype args, recommended_disk_space 8', async () => {
    const t = await create(app(), minimal());
    assert.equal(t.tag, 'latest');
    assert.equal(t.runtype, 'args');
    assert.equal(t.recommended_disk_space, 8);
    assert.equal(t.volume_info, null);
  });

  test('name and image are required; a wrong runtype or a non-Docker-flag env is a 400 naming the field', async () => {
    for (const [body, field] of [
      [{ image: 'ubuntu' }, 'name'],
      [{ name: 'x' }, 'image'],
      [minimal({ name: '   ' }), 'name'],
      [minimal({ runtype: 'ssh_direct' }), 'runtype'],
      [minimal({ env: 'NAME=value' }), 'env'],
      [minimal({ env: "-e 'unterminated" }), 'env'],
      [minimal({ recommended_disk_space: 'eight' }), 'recommended_disk_space'],
      [minimal({ recommended_disk_space: -1 }), 'recommended_disk_space'],
      [minimal({ extra_filters: { gpu_ram: { about: 1 } } }), 'extra_filters'],
      [minimal({ extra_filters: { gpu_ram: 5 } }), 'extra_filters'],
    ] as const) {
      const res = await app().request('POST', '/api/v0/template/', { body });
      assert.equal(res.status, 400, `${JSON.stringify(body)} → ${res.raw}`);
      assert.equal(res.body.success, false);
      assert.equal(res.body.error, 'bad_request');
      assert.match(res.body.msg, new RegExp(field));
    }
  });

  test('two templates with identical content get different hash_ids', async () => {
    const a = await create(app(), minimal({ name: 'twin' }));
    const b = await create(app(), minimal({ name: 'twin' }));
    assert.notEqual(a.hash_id, b.hash_id);
    assert.notEqual(a.id, b.id);
  });

  test('edit by hash_id: only given fields change, a new hash_id every time, the old one stops resolving', async () => {
    const t = await create(app(), minimal({ name: 'editme', desc: 'first', env: '-e A=1' }));
    const r1 = await app().request('PUT', '/api/v0/template/', { body: { hash_id: t.hash_id, desc: 'second', name: null } });
    assert.equal(r1.status, 200, r1.raw);
    assert.equal(r1.body.success, true);
    const e1 = r1.body.template;
    assert.equal(e1.id, t.id);
    assert.notEqual(e1.hash_id, t.hash_id);
    assert.match(e1.hash_id, /^[0-9a-f]{32}$/);
    assert.equal(e1.desc, 'second');
    assert.equal(e1.name, 'editme', 'null leaves a field unchanged');
    assert.equal(e1.env, '-e A=1');

    const stale = await app().request('PUT', '/api/v0/template/', { body: { hash_id: t.hash_id, desc: 'third' } });
    assert.equal(stale.status, 404);
    assert.equal(stale.body.error, 'not_found');
    assert.equal((await search(app(), { hash_id: { eq: t.hash_id } })).body.templates.length, 0);

    // An edit that changes nothing, or goes back to earlier content, still yields a new hash_id.
    const r2 = await app().request('PUT', '/api/v0/template/', { body: { hash_id: e1.hash_id } });
    assert.equal(r2.status, 200);
    const r3 = await app().request('PUT', '/api/v0/template/', { body: { hash_id: r2.body.template.hash_id, desc: 'first' } });
    const hashes = new Set([t.hash_id, e1.hash_id, r2.body.template.hash_id, r3.body.template.hash_id]);
    assert.equal(hashes.size, 4);
    const found = await search(app(), { hash_id: { eq: r3.body.template.hash_id } });
    assert.equal(found.body.templates.length, 1);
    assert.equal(found.body.templates[0].desc, 'first');
  });

  test('edit with the vastai client body (every key, nulls for unset): nulls keep their values', async () => {
    const t = await create(app(), clientCreateBody({ desc: 'described', readme: 'read me', tag: 'v3', private: false }));
    const body = { ...clientCreateBody({ name: null, image: null, env: null, onstart: null, recommended_disk_space: null, extra_filters: null }), hash_id: t.hash_id };
    const res = await app().request('PUT', '/api/v0/template/', { body });
    assert.equal(res.status, 200, res.raw);
    const e = res.body.template;
    assert.equal(e.name, t.name);
    assert.equal(e.image, t.image);
    assert.equal(e.env, t.env);
    assert.equal(e.desc, 'described');
    assert.equal(e.readme, 'read me');
    assert.equal(e.tag, 'v3');
    assert.equal(e.recommended_disk_space, 8);
    assert.deepEqual(e.extra_filters, t.extra_filters);
    assert.equal(e.private, true, 'the client sends private: true unless --public');
  });

  test('edit: a missing hash_id is 400, an unknown one 404, an invalid field 400 and nothing changes', async () => {
    assert.equal((await app().request('PUT', '/api/v0/template/', { body: { desc: 'x' } })).status, 400);
    assert.equal((await app().request('PUT', '/api/v0/template/', { body: { hash_id: 'f'.repeat(32) } })).status, 404);
    const t = await create(app(), minimal({ name: 'keep' }));
    const bad = await app().request('PUT', '/api/v0/template/', { body: { hash_id: t.hash_id, env: 'oops' } });
    assert.equal(bad.status, 400);
    const still = await search(app(), { hash_id: { eq: t.hash_id } });
    assert.equal(still.body.templates[0].env, '');
  });

  test('delete by numeric template_id: reply has msg; then gone', async () => {
    const t = await create(app(), minimal({ name: 'todelete' }));
    const res = await app().request('DELETE', '/api/v0/template/', { body: { template_id: t.id } });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.success, true);
    assert.equal(typeof res.body.msg, 'string');
    assert.equal((await search(app(), { id: { eq: t.id } })).body.templates.length, 0);
    const again = await app().request('DELETE', '/api/v0/template/', { body: { template_id: t.id } });
    assert.equal(again.status, 404);
  });

  test('delete: a hash_id given as template_id is 400; {hash_id} deletes; no id at all is 400', async () => {
    const t = await create(app(), minimal({ name: 'byhash' }));
    const wrong = await app().request('DELETE', '/api/v0/template/', { body: { template_id: t.hash_id } });
    assert.equal(wrong.status, 400);
    assert.equal(wrong.body.error, 'bad_request');
    assert.match(wrong.body.msg, /template_id/);
    assert.equal((await app().request('DELETE', '/api/v0/template/', { body: {} })).status, 400);
    assert.equal((await app().request('DELETE', '/api/v0/template/')).status, 400);
    const ok = await app().request('DELETE', '/api/v0/template/', { body: { hash_id: t.hash_id } });
    assert.equal(ok.status, 200);
    assert.equal(typeof ok.body.msg, 'string');
    assert.equal((await search(app(), { id: { eq: t.id } })).body.templates.length, 0);
  });

  test('private templates: invisible to others (search, edit, delete, use); public ones visible but not editable', async () => {
    const { api_key: other } = await app().createUser();
    const priv = await create(app(), minimal({ name: 'mine-private', private: true }));
    const pub = await create(app(), minimal({ name: 'mine-public', private: false }));

    const seen = await search(app(), { name: { in: ['mine-private', 'mine-public'] } }, other);
    assert.equal(seen.status, 200);
    assert.deepEqual(seen.body.templates.map((t: any) => t.name), ['mine-public']);
    assert.equal((await search(app(), { hash_id: { eq: priv.hash_id } }, other)).body.templates.length, 0);
    const ownerSees = await search(app(), { name: { in: ['mine-private', 'mine-public'] } });
    assert.equal(ownerSees.body.templates.length, 2);

    for (const t of [priv, pub]) {
      const put = await app().request('PUT', '/api/v0/template/', { key: other, body: { hash_id: t.hash_id, desc: 'hijack' } });
      assert.equal(put.status, 404);
      const del = await app().request('DELETE', '/api/v0/template/', { key: other, body: { template_id: t.id } });
      assert.equal(del.status, 404);
    }
    const otherUser = (await app().request('GET', '/api/v0/users/current', { key: other })).body;
    const scope = { userId: otherUser.id, teamId: null };
    await assert.rejects(app().services.templates.getForCreate(scope, priv.hash_id), (e: any) => e.code === 'not_found');
    assert.equal((await app().services.templates.getForCreate(scope, pub.hash_id)).id, pub.id);
  });

  test('registry password: stored sealed, shown to the owner only', async () => {
    const { api_key: other } = await app().createUser();
    const secret = 'reg-pass-3f9a1c';
    const t = await create(app(), minimal({ name: 'withlogin', private: false, docker_login_repo: 'registry.example.com', docker_login_user: 'bob', docker_login_pass: secret }));
    assert.equal(t.docker_login_pass, secret);
    const row = await app().store.db.selectFrom('templates').selectAll().where('id', '=', t.id).executeTakeFirstOrThrow();
    assert.ok(!JSON.stringify(row).includes(secret), 'the password is not stored in plain text');
    assert.match(row.docker_login_pass_sealed, /^v1\./);

    const mine = await search(app(), { id: { eq: t.id } });
    assert.equal(mine.body.templates[0].docker_login_pass, secret);
    const theirs = await search(app(), { id: { eq: t.id } }, other);
    assert.equal(theirs.body.templates.length, 1);
    assert.equal(theirs.body.templates[0].docker_login_pass, '');
    assert.ok(!theirs.raw.includes(secret));
    const filterOnPass = await search(app(), { docker_login_pass: { eq: secret } }, other);
    assert.equal(filterOnPass.status, 400);

    // The edit keeps the password unless one is given; creation gets it decrypted.
    const e = await app().request('PUT', '/api/v0/template/', { body: { hash_id: t.hash_id, desc: 'd' } });
    assert.equal(e.body.template.docker_login_pass, secret);
    const me = (await app().request('GET', '/api/v0/users/current')).body;
    const forCreate = await app().services.templates.getForCreate({ userId: me.id, teamId: null }, e.body.template.hash_id);
    assert.equal(forCreate.docker_login_pass, secret);
    assert.equal(forCreate.owned, true);
  });

  test('count_created and recent_create_date follow recordUse and are searchable', async () => {
    const t = await create(app(), minimal({ name: 'popular' }));
    await app().store.db.transaction().execute(async (tx) => {
      await app().services.templates.recordUse(tx, t.id, T0 + 10);
      await app().services.templates.recordUse(tx, t.id, T0 + 20);
    });
    const res = await search(app(), { id: { eq: String(t.id) } });
    assert.equal(res.body.templates[0].count_created, 2);
    assert.equal(res.body.templates[0].recent_create_date, T0 + 20);
    const byCount = await search(app(), { count_created: { gte: '2' }, recent_create_date: { gt: String(T0 + 19) } });
    assert.deepEqual(byCount.body.templates.map((x: any) => x.id), [t.id]);
  });

  test('unauthenticated is 401; a key without user_write cannot create but user_read can search', async () => {
    assert.equal((await app().request('GET', '/api/v0/template/', { key: null })).status, 401);
    assert.equal((await app().request('POST', '/api/v0/template/', { key: null, body: minimal() })).status, 401);
    const made = await app().request('POST', '/api/v0/auth/apikeys/', { body: { name: 'ro', permissions: { api: { user_read: {} } } } });
    assert.equal(made.status, 200, made.raw);
    const ro = made.body.key;
    assert.equal((await app().request('GET', '/api/v0/template/', { key: ro })).status, 200);
    for (const [method, body] of [['POST', minimal()], ['PUT', { hash_id: 'x' }], ['DELETE', { template_id: 1 }]] as const) {
      const res = await app().request(method, '/api/v0/template/', { key: ro, body });
      assert.equal(res.status, 403, `${method} ${res.raw}`);
      assert.equal(res.body.error, 'permission_denied');
    }
  });
});
