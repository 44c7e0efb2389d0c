// Team context and resources (contract §3 Team context): what a member makes with a team key belongs to the team;
// other members see it with the read category, outsiders (and the member's personal context) get 404.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';

async function member(t: TestApp, ownerKey: string, teamId: number, role: string) {
  const m = await t.createUser();
  await t.request('POST', `/api/v0/team/invite/?email=${encodeURIComponent(m.user.email)}&role=${role}`, { key: ownerKey });
  const code = (await t.request('GET', `/_emu/outbox?to=${encodeURIComponent(m.user.email)}`)).body.messages.at(-1).code;
  assert.equal((await t.request('POST', '/api/v0/team/invitations/accept/', { key: m.api_key, body: { code } })).status, 200);
  const k = await t.request('POST', '/api/v0/auth/apikeys/', { key: m.api_key, body: { team_id: teamId } });
  return { ...m, teamKey: k.body.key as string };
}

const hashes = async (t: TestApp, key: string): Promise<string[]> => {
  const res = await t.request('GET', `/api/v0/template/?select_filters=${encodeURIComponent('{}')}`, { key });
  assert.equal(res.status, 200, res.raw);
  return res.body.templates.map((x: any) => x.hash_id);
};

forEachDialect('team resources', (app) => {
  test('a private template made with a team key is the team\'s: members see it, outsiders get 404', async () => {
    const owner = await app().createUser();
    const team = await app().request('POST', '/api/v0/team/', { key: owner.api_key, body: { team_name: 'res' } });
    const a = await member(app(), owner.api_key, team.body.id, 'member');
    const b = await member(app(), owner.api_key, team.body.id, 'member');
    const made = await app().request('POST', '/api/v0/template/', {
      key: a.teamKey,
      body: { name: 'team-tpl', image: 'ubuntu', private: true, docker_login_repo: '', docker_login_user: '', docker_login_pass: '' },
    });
    assert.equal(made.status, 200, made.raw);
    const hash = made.body.template.hash_id;
    assert.ok((await hashes(app(), b.teamKey)).includes(hash), 'another member sees it');
    const ownerTeamKey = (await app().request('POST', '/api/v0/auth/apikeys/', { key: owner.api_key, body: { team_id: team.body.id } })).body.key;
    assert.ok((await hashes(app(), ownerTeamKey)).includes(hash), 'the owner, in the team context, sees it');
    assert.ok(!(await hashes(app(), owner.api_key)).includes(hash), "the owner's personal context is not the team's");
    const outsider = await app().createUser();
    assert.ok(!(await hashes(app(), outsider.api_key)).includes(hash), 'an outsider does not');
    assert.ok(!(await hashes(app(), a.api_key)).includes(hash), "the member's personal context does not");
    const del = await app().request('DELETE', '/api/v0/template/', { key: outsider.api_key, body: { hash_id: hash } });
    assert.equal(del.status, 404);
    assert.equal(del.body.error, 'not_found');
    // A member whose role lacks user_read cannot search at all.
    const roleId = (await app().request('GET', '/api/v0/team/roles/member/', { key: owner.api_key })).body.id;
    await app().request('PUT', `/api/v0/team/roles/${roleId}/`, { key: owner.api_key, body: { permissions: ['misc'] } });
    const denied = await app().request('GET', '/api/v0/template/', { key: b.teamKey });
    assert.equal(denied.status, 403);
    assert.equal(denied.body.error, 'permission_denied');
  });
});
