// A login session switched into a team's context (issue 15: the console's Teams page "switching into a team's
// context"; contract §3 Team context: a key made with `team_id` acts for the team, bounded by the member's role).
// PUT /api/v0/auth/sessions/team/ sets the session key's team; from then on the session acts exactly as a team key of
// that member: same team, same role-bounded permissions, same end when the member leaves.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';

const PASSWORD = 'correct horse battery';
const CSRF = { 'x-gpuplane-csrf': '1' };
let n = 0;
/** A billing_read route (the `member` role lacks the category). */
const CHARGES = `/api/v0/charges/?select_filters=${encodeURIComponent(JSON.stringify({ day: { gte: 0, lte: 2e9 } }))}`;

/** An owner's team and a member (role `member`) with a UI cookie session and a team key to compare against. */
async function setup(t: TestApp, role = 'member') {
  const owner = await t.createUser();
  const created = await t.request('POST', '/api/v0/team/', { key: owner.api_key, body: { team_name: `lab${n}` } });
  assert.equal(created.status, 200, created.raw);
  const teamId: number = created.body.id;
  if (role !== 'member') {
    const r = await t.request('POST', '/api/v0/team/roles/', { key: owner.api_key, body: { name: role, permissions: { api: { instance_read: {} } } } });
    assert.equal(r.status, 200, r.raw);
  }
  const email = `teamctx${process.pid}_${n++}@example.com`;
  const m = await t.createUser({ email, password: PASSWORD });
  const inv = await t.request('POST', `/api/v0/team/invite/?email=${encodeURIComponent(email)}&role=${role}`, { key: owner.api_key });
  assert.equal(inv.status, 200, inv.raw);
  const code = (await t.request('GET', `/_emu/outbox?to=${encodeURIComponent(email)}`)).body.messages.at(-1).code;
  assert.equal((await t.request('POST', '/api/v0/team/invitations/accept/', { key: m.api_key, body: { code } })).status, 200);
  const k = await t.request('POST', '/api/v0/auth/apikeys/', { key: m.api_key, body: { team_id: teamId, name: 'team' } });
  assert.equal(k.status, 200, k.raw);
  const login = await t.request('POST', '/api/v0/auth/login/', { key: null, body: { username: email, password: PASSWORD, client: 'ui' } });
  assert.equal(login.status, 200, login.raw);
  const cookie = `gpuplane_session=${/gpuplane_session=([^;]+)/.exec(String(login.headers['set-cookie']))![1]}`;
  /** A request signed in by the member's cookie (with the CSRF header). */
  const ui = (method: string, path: string, body?: unknown) => t.request(method, path, { key: null, body, headers: { cookie, ...CSRF } });
  return { owner, teamId, member: m, teamKey: k.body.key as string, ui, cookie };
}

forEachDialect('sessions: team context', (app) => {
  test('a member switches the cookie session into the team, acts as their team key would, then switches back', async () => {
    const { teamId, teamKey, ui, member } = await setup(app());
    const before = await ui('GET', '/api/v0/auth/sessions/team/');
    assert.equal(before.status, 200, before.raw);
    assert.deepEqual(before.body, { success: true, team_id: null, teams: [{ team_id: teamId, team_name: before.body.teams[0].team_name, role: 'member' }] });
    // Personal context: a member owns no team, may read billing, manages 2FA.
    assert.equal((await ui('GET', '/api/v0/team/members/')).status, 404);
    assert.equal((await ui('GET', CHARGES)).status, 200);

    const sw = await ui('PUT', '/api/v0/auth/sessions/team/', { team_id: teamId });
    assert.equal(sw.status, 200, sw.raw);
    assert.equal(sw.body.success, true);
    assert.equal(sw.body.team_id, teamId);
    assert.equal((await ui('GET', '/api/v0/auth/sessions/team/')).body.team_id, teamId);
    const listed = await ui('GET', '/api/v0/auth/sessions/');
    assert.deepEqual(listed.body.sessions.map((s: any) => [s.current, s.team_id]), [[true, teamId]]);

    // The same replies as the member's team key, route by route, and the same refusals.
    for (const path of ['/api/v0/team/members/', '/api/v0/team/roles-full/', '/api/v0/instances/', '/api/v0/auth/apikeys/']) {
      const bySession = await ui('GET', path);
      const byKey = await app().request('GET', path, { key: teamKey });
      assert.equal(bySession.status, 200, `${path}: ${bySession.raw}`);
      assert.deepEqual(bySession.body, byKey.body, path);
    }
    // The `member` role has no billing_read: bounded as the team key is.
    const charges = await ui('GET', CHARGES);
    assert.equal(charges.status, 403, charges.raw);
    assert.equal(charges.body.error, 'permission_denied');
    assert.equal((await app().request('GET', CHARGES, { key: teamKey })).body.error, 'permission_denied');
    // 2FA is personal (api-spec: team context calls are refused with team_user_forbidden).
    const tfa = await ui('GET', '/api/v0/tfa/status/');
    assert.equal(tfa.status, 403, tfa.raw);
    assert.equal(tfa.body.error, 'team_user_forbidden');
    // The member's personal API key is not affected.
    assert.equal((await app().request('GET', CHARGES, { key: member.api_key })).status, 200);

    const back = await ui('PUT', '/api/v0/auth/sessions/team/', { team_id: null });
    assert.equal(back.status, 200, back.raw);
    assert.equal(back.body.team_id, null);
    assert.equal((await ui('GET', '/api/v0/team/members/')).status, 404);
    assert.equal((await ui('GET', CHARGES)).status, 200);
    assert.equal((await ui('GET', '/api/v0/tfa/status/')).status, 200);
  });

  test('not a member (or no such team) is 404 not_found; an API key cannot switch (400); the cookie needs the CSRF header', async () => {
    const { teamId, ui, member } = await setup(app());
    const other = await app().request('POST', '/api/v0/team/', { key: (await app().createUser()).api_key, body: { team_name: 'elsewhere' } });
    assert.equal(other.status, 200, other.raw);
    for (const id of [other.body.id, 99999]) {
      const r = await ui('PUT', '/api/v0/auth/sessions/team/', { team_id: id });
      assert.equal(r.status, 404, r.raw);
      assert.equal(r.body.error, 'not_found');
    }
    assert.equal((await ui('GET', '/api/v0/auth/sessions/team/')).body.team_id, null);
    const byKey = await app().request('PUT', '/api/v0/auth/sessions/team/', { key: member.api_key, body: { team_id: teamId } });
    assert.equal(byKey.status, 400, byKey.raw);
    assert.equal(byKey.body.error, 'bad_request');
    const bad = await ui('PUT', '/api/v0/auth/sessions/team/', { team_id: 'x' });
    assert.equal(bad.status, 400, bad.raw);
    assert.equal(bad.body.success, false);
    // A CLI login's session key switches too (Bearer: no CSRF header needed).
    const cli = await app().request('POST', '/api/v0/auth/login/', { key: null, body: { username: member.user.email, password: PASSWORD, client: 'cli' } });
    const sk = cli.body.session_key as string;
    const viaCli = await app().request('PUT', '/api/v0/auth/sessions/team/', { key: sk, body: { team_id: teamId } });
    assert.equal(viaCli.status, 200, viaCli.raw);
    assert.equal((await app().request('GET', '/api/v0/team/members/', { key: sk })).status, 200);
  });

  test('a cookie switch without the CSRF header is refused (403 csrf_failed) and changes nothing', async () => {
    const { teamId, ui, cookie } = await setup(app());
    const r = await app().request('PUT', '/api/v0/auth/sessions/team/', { key: null, body: { team_id: teamId }, headers: { cookie } });
    assert.equal(r.status, 403, r.raw);
    assert.equal(r.body.error, 'csrf_failed');
    assert.equal((await ui('GET', '/api/v0/auth/sessions/team/')).body.team_id, null);
  });

  test('a member removed from the team: the session in the team context stops working, as their team keys do', async () => {
    const { owner, teamId, teamKey, ui, member } = await setup(app());
    assert.equal((await ui('PUT', '/api/v0/auth/sessions/team/', { team_id: teamId })).status, 200);
    const rm = await app().request('DELETE', `/api/v0/team/members/${member.user.id}/`, { key: owner.api_key });
    assert.equal(rm.status, 200, rm.raw);
    assert.equal((await app().request('GET', '/api/v0/team/members/', { key: teamKey })).status, 401);
    assert.equal((await ui('GET', '/api/v0/team/members/')).status, 401);
    assert.equal((await app().request('GET', CHARGES, { key: member.api_key })).status, 200);
  });

  test('a role without misc still sees and leaves the team context by session; its team key cannot call these routes', async () => {
    const { teamId, teamKey, ui } = await setup(app(), 'viewer');
    assert.equal((await ui('PUT', '/api/v0/auth/sessions/team/', { team_id: teamId })).status, 200);
    const users = await ui('GET', '/api/v0/users/current/');
    assert.equal(users.status, 403, users.raw);
    assert.equal(users.body.error, 'permission_denied');
    const seen = await ui('GET', '/api/v0/auth/sessions/team/');
    assert.equal(seen.status, 200, seen.raw);
    assert.deepEqual([seen.body.team_id, seen.body.teams.map((t: any) => t.role)], [teamId, ['viewer']]);
    const byKey = await app().request('GET', '/api/v0/auth/sessions/team/', { key: teamKey });
    assert.equal(byKey.status, 403, byKey.raw);
    assert.equal(byKey.body.error, 'permission_denied');
    assert.equal((await ui('PUT', '/api/v0/auth/sessions/team/', { team_id: null })).status, 200);
    assert.equal((await ui('GET', '/api/v0/users/current/')).status, 200);
  });
});
