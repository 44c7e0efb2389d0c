// Team context for instances and charges (issue 5; contract §3 Team context): an instance rented with a team key is
// the team's; members see it with instance_read, stop it with instance_write; personal contexts and outsiders get
// 404; the team's charges show it to billing_read members only. Deleting a team that still has instances is refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { addMachine, BOOT_MAX_S, offerFor, rent, statusOf } from './instances-fixtures.js';

async function member(t: TestApp, ownerKey: string, teamId: number, role: string) {
  const m = await t.createUser();
  const inv = await t.request('POST', `/api/v0/team/invite/?email=${encodeURIComponent(m.user.email)}&role=${role}`, { key: ownerKey });
  assert.equal(inv.status, 200, inv.raw);
  const code = (await t.request('GET', `/_emu/outbox?to=${encodeURIComponent(m.user.email)}`)).body.messages.at(-1).code;
  assert.equal((await t.request('POST', '/api/v0/team/invitations/accept/', { key: m.api_key, body: { code } })).status, 200);
  const k = await t.request('POST', '/api/v0/auth/apikeys/', { key: m.api_key, body: { team_id: teamId } });
  assert.equal(k.status, 200, k.raw);
  return { ...m, teamKey: k.body.key as string };
}

async function team(t: TestApp, name: string) {
  const owner = await t.createUser({ credit: 1000 });
  const res = await t.request('POST', '/api/v0/team/', { key: owner.api_key, body: { team_name: name } });
  assert.equal(res.status, 200, res.raw);
  const ownerTeamKey = (await t.request('POST', '/api/v0/auth/apikeys/', { key: owner.api_key, body: { team_id: res.body.id } })).body.key as string;
  return { owner, id: res.body.id as number, ownerTeamKey };
}

const listIds = async (t: TestApp, key: string): Promise<number[]> => {
  const res = await t.request('GET', '/api/v0/instances/', { key });
  assert.equal(res.status, 200, res.raw);
  return res.body.instances.map((i: any) => i.id);
};

const chargeSources = async (t: TestApp, key: string): Promise<string[]> => {
  const res = await t.request('GET', '/api/v0/charges/', { key, query: { select_filters: JSON.stringify({ day: { gte: 0, lte: 4_000_000_000 } }), limit: '500' } });
  assert.equal(res.status, 200, res.raw);
  return res.body.results.map((r: any) => r.source);
};

forEachDialect('team instances and charges', (app) => {
  test('an instance rented with a team key is the team\'s: members see and stop it, others get 404', async () => {
    const tm = await team(app(), 'gpu-team');
    const a = await member(app(), tm.owner.api_key, tm.id, 'member');
    const b = await member(app(), tm.owner.api_key, tm.id, 'member');
    const accountant = await member(app(), tm.owner.api_key, tm.id, 'manager');
    const outsider = await app().createUser({ credit: 1000 });

    const m = await addMachine(app());
    const made = await rent(app(), offerFor(m, 1), {}, a.teamKey);
    assert.equal(made.status, 200, made.raw);
    const id = made.body.new_contract as number;
    await app().advance(BOOT_MAX_S);

    // Another member's team key with instance_read: list and show.
    assert.ok((await listIds(app(), b.teamKey)).includes(id));
    assert.equal((await statusOf(app(), id, b.teamKey)).actual_status, 'running');
    assert.ok((await listIds(app(), tm.ownerTeamKey)).includes(id), 'the owner in the team context sees it');

    // Personal contexts (the renter's, the owner's) and an outsider: not theirs.
    for (const key of [a.api_key, tm.owner.api_key, outsider.api_key]) {
      assert.ok(!(await listIds(app(), key)).includes(id));
      // Not theirs reads as not there: `{"instances": null}`, as vast.py's show instance expects (issue 29 item 2).
      const shown = await app().request('GET', `/api/v0/instances/${id}/`, { key });
      assert.equal(shown.status, 200, shown.raw);
      assert.equal(shown.body.instances, null);
      const stop = await app().request('PUT', `/api/v0/instances/${id}/`, { key, body: { state: 'stopped' } });
      assert.equal(stop.status, 404, stop.raw);
    }

    // The team's charges: a billing_read member sees the instance's contract; an outsider does not.
    await app().advance(3600);
    assert.ok((await chargeSources(app(), accountant.teamKey)).includes(`instance-${id}`));
    assert.ok(!(await chargeSources(app(), outsider.api_key)).includes(`instance-${id}`));
    assert.ok(!(await chargeSources(app(), a.api_key)).includes(`instance-${id}`), "not in the renter's personal charges");
    const denied = await app().request('GET', '/api/v0/charges/', { key: b.teamKey, query: { select_filters: '{}' } });
    assert.equal(denied.status, 403, 'the member role has no billing_read');
    assert.equal(denied.body.error, 'permission_denied');

    // Another member's key with instance_write stops it.
    const stop = await app().request('PUT', `/api/v0/instances/${id}/`, { key: b.teamKey, body: { state: 'stopped' } });
    assert.equal(stop.status, 200, stop.raw);
    assert.equal((await statusOf(app(), id, a.teamKey)).actual_status, 'stopped');
  });

  test('a member whose role lacks instance_write gets 403 renting; with instance_read only it can still look', async () => {
    const tm = await team(app(), 'viewers');
    const role = await app().request('POST', '/api/v0/team/roles/', { key: tm.owner.api_key, body: { name: 'viewer', permissions: ['instance_read'] } });
    assert.equal(role.status, 200, role.raw);
    const v = await member(app(), tm.owner.api_key, tm.id, 'viewer');
    const m = await addMachine(app());
    const denied = await rent(app(), offerFor(m, 1), {}, v.teamKey);
    assert.equal(denied.status, 403, denied.raw);
    assert.equal(denied.body.error, 'permission_denied');
    const made = await rent(app(), offerFor(m, 1), {}, tm.ownerTeamKey);
    assert.equal(made.status, 200, made.raw);
    assert.ok((await listIds(app(), v.teamKey)).includes(made.body.new_contract));
    const stop = await app().request('PUT', `/api/v0/instances/${made.body.new_contract}/`, { key: v.teamKey, body: { state: 'stopped' } });
    assert.equal(stop.status, 403, stop.raw);
  });

  test('a team with instances cannot be deleted (409) until they are destroyed', async () => {
    const tm = await team(app(), 'busy');
    const m = await addMachine(app());
    const made = await rent(app(), offerFor(m, 1), { target_state: 'stopped' }, tm.ownerTeamKey);
    assert.equal(made.status, 200, made.raw);
    const id = made.body.new_contract;
    const refused = await app().request('DELETE', '/api/v0/team/', { key: tm.owner.api_key });
    assert.equal(refused.status, 409, refused.raw);
    assert.equal(refused.body.error, 'conflict');
    assert.match(refused.body.msg, /instance/);
    assert.equal((await statusOf(app(), id, tm.ownerTeamKey)).intended_status, 'stopped', 'the instance is untouched');

    assert.equal((await app().request('DELETE', `/api/v0/instances/${id}/`, { key: tm.ownerTeamKey })).status, 200);
    const deleted = await app().request('DELETE', '/api/v0/team/', { key: tm.owner.api_key });
    assert.equal(deleted.status, 200, deleted.raw);
    // The team's keys are revoked with it.
    assert.equal((await app().request('GET', '/api/v0/instances/', { key: tm.ownerTeamKey })).status, 401);
  });
});
