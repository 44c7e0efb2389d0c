// Account environment variables (`/api/v0/secrets/`, client-compat-more §b): what `vastai show/create/update/delete
// env-var` send and read; values sealed at rest; team context shares a team's variables with its members.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { ENV_VAR_VALUE_MAX, ENV_VARS_MAX } from '../src/env-vars/env-vars-types.js';

async function teamMember(t: TestApp, ownerKey: string, teamId: number) {
  const m = await t.createUser();
  await t.request('POST', `/api/v0/team/invite/?email=${encodeURIComponent(m.user.email)}&role=member`, { key: ownerKey });
  const code = (await t.request('GET', `/_emu/outbox?to=${encodeURIComponent(m.user.email)}`)).body.messages.at(-1).code;
  assert.equal((await t.request('POST', '/api/v0/team/invitations/accept/', { key: m.api_key, body: { code } })).status, 200);
  const k = await t.request('POST', '/api/v0/auth/apikeys/', { key: m.api_key, body: { team_id: teamId } });
  return { ...m, teamKey: k.body.key as string };
}

forEachDialect('environment variables', (app) => {
  test('create, show (values in clear, for the client to mask), update, delete', async () => {
    const u = await app().createUser();
    const key = u.api_key;
    const empty = await app().request('GET', '/api/v0/secrets/', { key });
    assert.equal(empty.status, 200);
    assert.deepEqual(empty.body, { success: true, secrets: {} });

    const made = await app().request('POST', '/api/v0/secrets/', { key, body: { key: 'HF_TOKEN', value: 'hf_abc 123=x' } });
    assert.equal(made.status, 200, made.raw);
    assert.equal(made.body.success, true);
    assert.match(made.body.msg, /HF_TOKEN/);
    await app().request('POST', '/api/v0/secrets/', { key, body: { key: 'A_FIRST', value: '' } });
    assert.deepEqual((await app().request('GET', '/api/v0/secrets/', { key })).body.secrets, { A_FIRST: '', HF_TOKEN: 'hf_abc 123=x' });

    const again = await app().request('POST', '/api/v0/secrets/', { key, body: { key: 'HF_TOKEN', value: 'other' } });
    assert.equal(again.status, 409);
    assert.equal(again.body.error, 'conflict');
    assert.match(again.body.msg, /already exists/);

    const changed = await app().request('PUT', '/api/v0/secrets/', { key, body: { key: 'HF_TOKEN', value: 'hf_new' } });
    assert.equal(changed.status, 200, changed.raw);
    assert.equal((await app().request('GET', '/api/v0/secrets/', { key })).body.secrets.HF_TOKEN, 'hf_new');
    const missing = await app().request('PUT', '/api/v0/secrets/', { key, body: { key: 'NOPE', value: 'x' } });
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error, 'not_found');

    const gone = await app().request('DELETE', '/api/v0/secrets/', { key, body: { key: 'HF_TOKEN' } });
    assert.equal(gone.status, 200, gone.raw);
    assert.deepEqual((await app().request('GET', '/api/v0/secrets/', { key })).body.secrets, { A_FIRST: '' });
    const twice = await app().request('DELETE', '/api/v0/secrets/', { key, body: { key: 'HF_TOKEN' } });
    assert.equal(twice.status, 404);
  });

  test('variables are per user: another user neither sees nor changes them', async () => {
    const a = await app().createUser();
    const b = await app().createUser();
    await app().request('POST', '/api/v0/secrets/', { key: a.api_key, body: { key: 'MINE', value: 'a-secret' } });
    assert.deepEqual((await app().request('GET', '/api/v0/secrets/', { key: b.api_key })).body.secrets, {});
    assert.equal((await app().request('PUT', '/api/v0/secrets/', { key: b.api_key, body: { key: 'MINE', value: 'x' } })).status, 404);
    assert.equal((await app().request('DELETE', '/api/v0/secrets/', { key: b.api_key, body: { key: 'MINE' } })).status, 404);
    // B may have its own of the same name.
    assert.equal((await app().request('POST', '/api/v0/secrets/', { key: b.api_key, body: { key: 'MINE', value: 'b' } })).status, 200);
    assert.equal((await app().request('GET', '/api/v0/secrets/', { key: a.api_key })).body.secrets.MINE, 'a-secret');
  });

  test('bad names and values are 400s naming the field; the values are sealed in the database', async () => {
    const u = await app().createUser();
    for (const body of [
      { key: '1ABC', value: 'x' },
      { key: 'A-B', value: 'x' },
      { key: '', value: 'x' },
      { key: 'X'.repeat(129), value: 'x' },
      { key: 'OK', value: 5 },
      { key: 'OK', value: 'v'.repeat(ENV_VAR_VALUE_MAX + 1) },
      { value: 'x' },
    ]) {
      const r = await app().request('POST', '/api/v0/secrets/', { key: u.api_key, body });
      assert.equal(r.status, 400, JSON.stringify(body).slice(0, 80));
      assert.equal(r.body.error, 'bad_request');
      assert.match(r.body.msg, /key|value/);
    }
    await app().request('POST', '/api/v0/secrets/', { key: u.api_key, body: { key: 'SEALED', value: 'plain-text-value-42' } });
    const rows = await app().store.db.selectFrom('env_vars').selectAll().where('name', '=', 'SEALED').execute();
    assert.equal(rows.length, 1);
    assert.ok(!rows[0].value_sealed.includes('plain-text-value-42'));
    assert.equal(app().services.deps.secretBox.open(rows[0].value_sealed), 'plain-text-value-42');
  });

  test(`an account holds at most ${ENV_VARS_MAX} variables`, async () => {
    const u = await app().createUser();
    const now = app().clock.now();
    await app().store.db
      .insertInto('env_vars')
      .values(Array.from({ length: ENV_VARS_MAX }, (_, i) => ({ owner: `user:${u.user.id}`, user_id: u.user.id, name: `V${i}`, value_sealed: app().services.deps.secretBox.seal('x'), created_at: now, updated_at: now })))
      .execute();
    const r = await app().request('POST', '/api/v0/secrets/', { key: u.api_key, body: { key: 'ONE_MORE', value: 'x' } });
    assert.equal(r.status, 400);
    assert.match(r.body.msg, new RegExp(`at most ${ENV_VARS_MAX}`));
  });

  test('in a team context the variables are the team\'s: members share them; personal ones stay apart', async () => {
    const owner = await app().createUser();
    const team = await app().request('POST', '/api/v0/team/', { key: owner.api_key, body: { team_name: 'env' } });
    const a = await teamMember(app(), owner.api_key, team.body.id);
    const b = await teamMember(app(), owner.api_key, team.body.id);
    assert.equal((await app().request('POST', '/api/v0/secrets/', { key: a.teamKey, body: { key: 'TEAM_VAR', value: 't' } })).status, 200);
    assert.deepEqual((await app().request('GET', '/api/v0/secrets/', { key: b.teamKey })).body.secrets, { TEAM_VAR: 't' });
    assert.deepEqual((await app().request('GET', '/api/v0/secrets/', { key: a.api_key })).body.secrets, {}, "the member's personal context");
    const outsider = await app().createUser();
    assert.deepEqual((await app().request('GET', '/api/v0/secrets/', { key: outsider.api_key })).body.secrets, {});
    assert.deepEqual(await app().services.envVars.environmentOf({ userId: b.user.id, teamId: team.body.id }), { TEAM_VAR: 't' });
  });
});
