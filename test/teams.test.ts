// Behaviour of teams, invitations, roles and the team context (contract §3 Teams, Team context, Team roles; spec:
// Show team role). Members act through team keys bounded by their current role; team resources stay in the team.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';

const doc = (...cats: string[]) => ({ api: Object.fromEntries(cats.map((c) => [c, {}])) });

/** An owner with a team, and a helper that invites and admits a new member with a role, returning their team key. */
async function setup(t: TestApp) {
  const owner = await t.createUser();
  const created = await t.request('POST', '/api/v0/team/', { key: owner.api_key, body: { team_name: 'lab' } });
  assert.equal(created.status, 200, created.raw);
  const teamId: number = created.body.id;
  async function join(role: string) {
    const m = await t.createUser();
    const inv = await t.request('POST', `/api/v0/team/invite/?email=${encodeURIComponent(m.user.email)}&role=${role}`, { key: owner.api_key });
    assert.equal(inv.status, 200, inv.raw);
    const box = await t.request('GET', `/_emu/outbox?to=${encodeURIComponent(m.user.email)}`);
    const code = box.body.messages.at(-1).code;
    const acc = await t.request('POST', '/api/v0/team/invitations/accept/', { key: m.api_key, body: { code } });
    assert.equal(acc.status, 200, acc.raw);
    const k = await t.request('POST', '/api/v0/auth/apikeys/', { key: m.api_key, body: { team_id: teamId, name: 'team' } });
    assert.equal(k.status, 200, k.raw);
    return { ...m, teamKey: k.body.key as string, teamKeyId: k.body.id as number };
  }
  return { owner, teamId, join };
}

forEachDialect('teams', (app) => {
  test('create: the creator owns it; default roles exist; the owner is the one member', async () => {
    const owner = await app().createUser();
    const res = await app().request('POST', '/api/v0/team/', { key: owner.api_key, body: { team_name: 'alpha' } });
    assert.equal(res.status, 200);
    assert.equal(res.body.success, true);
    assert.equal(typeof res.body.id, 'number');
    assert.equal(res.body.team_name, 'alpha');
    assert.equal(res.body.owner_id, owner.user.id);
    const members = await app().request('GET', '/api/v0/team/members/', { key: owner.api_key });
    assert.equal(members.status, 200);
    assert.deepEqual(members.body.members.map((m: any) => [m.id, m.role, m.is_owner]), [[owner.user.id, 'owner', true]]);
    const roles = await app().request('GET', '/api/v0/team/roles-full/', { key: owner.api_key });
    assert.deepEqual(roles.body.map((r: any) => r.name), ['manager', 'member']);
    const owned = await app().request('GET', '/api/v0/team/roles/owner/', { key: owner.api_key });
    assert.equal(owned.status, 200);
    assert.ok(owned.body.permissions.includes('team_write') && owned.body.permissions.includes('billing_write'));
  });

  test('team_name is required: 400 bad_request naming it', async () => {
    const res = await app().request('POST', '/api/v0/team/', { body: {} });
    assert.equal(res.status, 400);
    assert.match(res.body.msg, /team_name/);
  });

  test('roles: create, show by name, list, update by id, remove by name; missing role is 404 with the error object', async () => {
    const { owner } = await setup(app());
    const k = owner.api_key;
    const c = await app().request('POST', '/api/v0/team/roles/', { key: k, body: { name: 'viewer', permissions: doc('instance_read', 'misc') } });
    assert.equal(c.status, 200, c.raw);
    assert.equal(c.body.success, true);
    assert.equal(c.body.name, 'viewer');
    assert.deepEqual(c.body.permissions, ['misc', 'instance_read']);
    const shown = await app().request('GET', '/api/v0/team/roles/viewer/', { key: k });
    assert.deepEqual(shown.body, { id: c.body.id, name: 'viewer', permissions: ['misc', 'instance_read'], team_id: c.body.team_id });
    const dup = await app().request('POST', '/api/v0/team/roles/', { key: k, body: { name: 'viewer', permissions: doc('misc') } });
    assert.equal(dup.status, 409);
    const up = await app().request('PUT', `/api/v0/team/roles/${c.body.id}/`, { key: k, body: { name: 'reader', permissions: ['instance_read'] } });
    assert.equal(up.status, 200, up.raw);
    assert.deepEqual([up.body.name, up.body.permissions], ['reader', ['instance_read']]);
    const gone = await app().request('GET', '/api/v0/team/roles/viewer/', { key: k });
    assert.equal(gone.status, 404);
    assert.deepEqual(Object.keys(gone.body).sort(), ['error', 'msg', 'success']);
    assert.equal(gone.body.success, false);
    assert.equal(gone.body.error, 'not_found');
    const list = await app().request('GET', '/api/v0/team/roles-full/', { key: k });
    assert.deepEqual(list.body.map((r: any) => r.name), ['manager', 'member', 'reader']);
    const rm = await app().request('DELETE', '/api/v0/team/roles/reader/', { key: k });
    assert.equal(rm.status, 200);
    assert.equal((await app().request('DELETE', '/api/v0/team/roles/reader/', { key: k })).status, 404);
    assert.equal((await app().request('PUT', '/api/v0/team/roles/999999/', { key: k, body: { name: 'x' } })).status, 404);
  });

  test('roles: bad documents are 400; the owner role cannot be made, changed or removed', async () => {
    const { owner } = await setup(app());
    const k = owner.api_key;
    const bad = await app().request('POST', '/api/v0/team/roles/', { key: k, body: { name: 'x', permissions: { api: { nope: {} } } } });
    assert.equal(bad.status, 400);
    assert.match(bad.body.msg, /unknown category "nope"/);
    const badList = await app().request('POST', '/api/v0/team/roles/', { key: k, body: { name: 'x', permissions: ['misc', 'nope'] } });
    assert.equal(badList.status, 400);
    const noPerms = await app().request('POST', '/api/v0/team/roles/', { key: k, body: { name: 'x' } });
    assert.equal(noPerms.status, 400);
    assert.equal((await app().request('POST', '/api/v0/team/roles/', { key: k, body: { name: 'owner', permissions: doc('misc') } })).status, 400);
    const ownerRole = await app().request('GET', '/api/v0/team/roles/owner/', { key: k });
    const upd = await app().request('PUT', `/api/v0/team/roles/${ownerRole.body.id}/`, { key: k, body: { permissions: doc('misc') } });
    assert.equal(upd.status, 403);
    assert.equal((await app().request('DELETE', '/api/v0/team/roles/owner/', { key: k })).status, 403);
  });

  test('invite: the code lands in the outbox; the invited account accepts and becomes a member with the role', async () => {
    const { owner, join } = await setup(app());
    const m = await join('member');
    const members = await app().request('GET', '/api/v0/team/members/', { key: owner.api_key });
    const row = members.body.members.find((x: any) => x.id === m.user.id);
    assert.equal(row.role, 'member');
    assert.equal(row.email, m.user.email);
    assert.equal(members.body.invitations.length, 0);
    const box = await app().request('GET', `/_emu/outbox?to=${encodeURIComponent(m.user.email)}&channel=email`);
    assert.equal(box.body.messages.length, 1);
    assert.match(box.body.messages[0].text, /lab/);
  });

  test('a role in use cannot be removed (409); unknown invite role is 404', async () => {
    const { owner, join } = await setup(app());
    await join('member');
    assert.equal((await app().request('DELETE', '/api/v0/team/roles/member/', { key: owner.api_key })).status, 409);
    const inv = await app().request('POST', '/api/v0/team/invite/?email=someone@example.com&role=ghost', { key: owner.api_key });
    assert.equal(inv.status, 404);
    const noEmail = await app().request('POST', '/api/v0/team/invite/?role=member', { key: owner.api_key });
    assert.equal(noEmail.status, 400);
  });

  test("team key: bounded by the member's role; role changes take effect on the member's next request", async () => {
    const { owner, join } = await setup(app());
    const m = await join('member');
    // member role: team_read yes, team_write no.
    assert.equal((await app().request('GET', '/api/v0/team/members/', { key: m.teamKey })).status, 200);
    const denied = await app().request('POST', '/api/v0/team/roles/', { key: m.teamKey, body: { name: 'x', permissions: doc('misc') } });
    assert.equal(denied.status, 403);
    assert.equal(denied.body.error, 'permission_denied');
    const memberRole = await app().request('GET', '/api/v0/team/roles/member/', { key: owner.api_key });
    const up = await app().request('PUT', `/api/v0/team/roles/${memberRole.body.id}/`, { key: owner.api_key, body: { permissions: doc('misc') } });
    assert.equal(up.status, 200);
    const now = await app().request('GET', '/api/v0/team/members/', { key: m.teamKey });
    assert.equal(now.status, 403);
    assert.equal(now.body.error, 'permission_denied');
    // And back: the same key regains the right with the role.
    await app().request('PUT', `/api/v0/team/roles/${memberRole.body.id}/`, { key: owner.api_key, body: { permissions: doc('misc', 'team_read') } });
    assert.equal((await app().request('GET', '/api/v0/team/members/', { key: m.teamKey })).status, 200);
    // Giving the member another role applies at once too.
    const set = await app().request('PUT', `/api/v0/team/members/${m.user.id}/`, { key: owner.api_key, body: { role: 'manager' } });
    assert.equal(set.status, 200, set.raw);
    const made = await app().request('POST', '/api/v0/team/roles/', { key: m.teamKey, body: { name: 'ops', permissions: doc('misc') } });
    assert.equal(made.status, 200, made.raw);
  });

  test('removing a member: their team keys stop working (401); their personal key still works', async () => {
    const { owner, join } = await setup(app());
    const m = await join('manager');
    assert.equal((await app().request('GET', '/api/v0/team/members/', { key: m.teamKey })).status, 200);
    const rm = await app().request('DELETE', `/api/v0/team/members/${m.user.id}/`, { key: owner.api_key });
    assert.equal(rm.status, 200);
    const after = await app().request('GET', '/api/v0/team/members/', { key: m.teamKey });
    assert.equal(after.status, 401);
    assert.equal(after.body.error, 'auth_error');
    assert.equal((await app().request('GET', '/api/v0/users/current', { key: m.api_key })).status, 200);
    assert.equal((await app().request('DELETE', `/api/v0/team/members/${m.user.id}/`, { key: owner.api_key })).status, 404);
    assert.equal((await app().request('DELETE', `/api/v0/team/members/${owner.user.id}/`, { key: owner.api_key })).status, 403);
  });

  test('team keys: listed in the team context, and a member sees only their own', async () => {
    const { teamId, join } = await setup(app());
    const a = await join('member');
    const b = await join('member');
    const listA = await app().request('GET', '/api/v0/auth/apikeys/', { key: a.teamKey });
    assert.equal(listA.status, 200);
    assert.deepEqual(listA.body.apikeys.map((k: any) => [k.id, k.team_id]), [[a.teamKeyId, teamId]]);
    assert.equal((await app().request('GET', `/api/v0/auth/apikeys/${b.teamKeyId}`, { key: a.teamKey })).status, 404);
    // A key made in the team context stays in it.
    const child = await app().request('POST', '/api/v0/auth/apikeys/', { key: a.teamKey, body: { name: 'child' } });
    assert.equal(child.status, 200);
    assert.equal(child.body.team_id, teamId);
  });

  test('team resources: members see the team roles; outsiders get 404', async () => {
    const { owner, join } = await setup(app());
    await app().request('POST', '/api/v0/team/roles/', { key: owner.api_key, body: { name: 'secret-role', permissions: doc('misc') } });
    const m = await join('member');
    assert.equal((await app().request('GET', '/api/v0/team/roles/secret-role/', { key: m.teamKey })).status, 200);
    const outsider = await app().createUser();
    const shown = await app().request('GET', '/api/v0/team/roles/secret-role/', { key: outsider.api_key });
    assert.equal(shown.status, 404);
    assert.equal(shown.body.error, 'not_found');
    assert.equal((await app().request('GET', '/api/v0/team/members/', { key: outsider.api_key })).status, 404);
    // The outsider's own team does not see the first team's roles either.
    await app().request('POST', '/api/v0/team/', { key: outsider.api_key, body: { team_name: 'other' } });
    assert.equal((await app().request('GET', '/api/v0/team/roles/secret-role/', { key: outsider.api_key })).status, 404);
  });

  test('delete team: owner only; every team key is revoked', async () => {
    const { owner, join } = await setup(app());
    const m = await join('manager');
    const byMember = await app().request('DELETE', '/api/v0/team/', { key: m.teamKey });
    assert.equal(byMember.status, 403);
    const del = await app().request('DELETE', '/api/v0/team/', { key: owner.api_key });
    assert.equal(del.status, 200);
    assert.equal((await app().request('GET', '/api/v0/team/members/', { key: m.teamKey })).status, 401);
    assert.equal((await app().request('GET', '/api/v0/team/members/', { key: owner.api_key })).status, 404);
  });

  test('every 2FA route refuses a team key with 403 team_user_forbidden (spec: 2FA rule 4)', async () => {
    const tfa = app().routes.filter((r) => r.url.startsWith('/api/v0/tfa'));
    assert.ok(tfa.length >= 5, `the 2FA routes are registered (${tfa.length} found)`);
    const { join } = await setup(app());
    const m = await join('manager');
    for (const r of tfa) {
      const res = await app().request(r.method, r.url.replace(/:(\w+)/g, '1'), { key: m.teamKey, body: r.method === 'GET' ? undefined : {} });
      assert.equal(res.status, 403, `${r.method} ${r.url}: ${res.raw}`);
      assert.equal(res.body.error, 'team_user_forbidden', `${r.method} ${r.url}`);
    }
  });
});
