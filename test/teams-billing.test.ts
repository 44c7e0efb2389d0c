// Who pays for a team's work (issue 29 item 17; contract §3 Team context): what a member makes with a team key is
// the team's, paid from the team owner's credit, so removing the member never leaves them paying for what they can
// no longer see: an instance they rented, and the workers a workergroup they made keeps renting after they left.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { addMachine, BOOT_MAX_S, offerFor, rent, statusOf } from './instances-fixtures.js';
import { balance } from './deposits-fixtures.js';
import { AUTOSCALE_PERIOD_S } from '../src/serverless/serverless-autoscaler.js';
import { usersContract } from '../src/users/users-contract.js';
import type { Principal } from '../src/platform/auth.js';

async function teamWithMember(t: TestApp, name: string) {
  const owner = await t.createUser({ credit: 1000 });
  const team = await t.request('POST', '/api/v0/team/', { key: owner.api_key, body: { team_name: name } });
  assert.equal(team.status, 200, team.raw);
  const teamKey = async (apiKey: string) => {
    const k = await t.request('POST', '/api/v0/auth/apikeys/', { key: apiKey, body: { team_id: team.body.id } });
    assert.equal(k.status, 200, k.raw);
    return k.body.key as string;
  };
  // The member has credit of their own: were they billed, the rent would go through and show in it.
  const member = await t.createUser({ credit: 1000 });
  const inv = await t.request('POST', `/api/v0/team/invite/?email=${encodeURIComponent(member.user.email)}&role=member`, { key: owner.api_key });
  assert.equal(inv.status, 200, inv.raw);
  const code = (await t.request('GET', `/_emu/outbox?to=${encodeURIComponent(member.user.email)}`)).body.messages.at(-1).code;
  assert.equal((await t.request('POST', '/api/v0/team/invitations/accept/', { key: member.api_key, body: { code } })).status, 200);
  return { owner, member, ownerTeamKey: await teamKey(owner.api_key), memberTeamKey: await teamKey(member.api_key) };
}

const removeMember = async (t: TestApp, ownerKey: string, userId: number) => {
  const res = await t.request('DELETE', `/api/v0/team/members/${userId}/`, { key: ownerKey });
  assert.equal(res.status, 200, res.raw);
};

const chargeSources = async (t: TestApp, key: string): Promise<string[]> => {
  const res = await t.request('GET', '/api/v0/charges/', { key, query: { select_filters: JSON.stringify({ day: { gte: 0, lte: 4_000_000_000 } }), limit: '500' } });
  assert.equal(res.status, 200, res.raw);
  return res.body.results.map((r: any) => r.source);
};

forEachDialect('who pays for team work', (app) => {
  test('a workergroup a removed member made keeps renting for the team: the owner pays, the team sees and deletes it', async () => {
    const { owner, member, ownerTeamKey, memberTeamKey } = await teamWithMember(app(), 'autoscaling');
    await addMachine(app(), { num_gpus: 4, geolocation: 'Team Zone', price_gpu: 0.5 });
    const template = await app().request('POST', '/api/v0/template/', { key: memberTeamKey, body: { name: 'worker', image: 'vllm/vllm-openai' } });
    assert.equal(template.status, 200, template.raw);
    const ep = await app().request('POST', '/api/v0/endptjobs/', {
      key: memberTeamKey, body: { endpoint_name: 'team-ep', min_load: 0, target_util: 0.5, cold_mult: 1, cold_workers: 0, max_workers: 2 },
    });
    assert.equal(ep.status, 200, ep.raw);
    const wg = await app().request('POST', '/api/v0/autojobs/', {
      key: memberTeamKey, body: { endpoint_id: ep.body.result, template_hash: template.body.template.hash_id, search_params: 'geolocation=Team_Zone num_gpus=1' },
    });
    assert.equal(wg.status, 200, wg.raw);
    await app().advance(1);

    await removeMember(app(), owner.api_key, member.user.id);
    const memberBefore = await balance(app(), member.api_key);
    const ownerBefore = await balance(app(), owner.api_key);

    // Load for two workers (50 per worker at target_util 0.5): the autoscaler rents after the member is gone.
    assert.equal((await app().request('POST', `/_emu/endpoints/${ep.body.result}/load`, { body: { load: 100 } })).status, 200);
    await app().advance(AUTOSCALE_PERIOD_S);
    const groups = await app().request('GET', '/api/v0/autojobs/', { key: ownerTeamKey });
    assert.equal(groups.status, 200, groups.raw);
    const group = groups.body.results.find((w: any) => w.id === wg.body.id);
    assert.ok(group, 'the team sees the workergroup');
    assert.equal(group.workers.length, 2, JSON.stringify(group));
    const teamInstances = (await app().request('GET', '/api/v0/instances/', { key: ownerTeamKey })).body.instances.map((i: any) => i.id);
    for (const id of group.workers) assert.ok(teamInstances.includes(id), `the team sees worker ${id}`);

    await app().advance(3600);
    assert.equal(await balance(app(), member.api_key), memberBefore, 'the removed member pays nothing');
    assert.ok((await balance(app(), owner.api_key)) < ownerBefore, "the team owner's credit pays the workers");
    assert.ok(!(await chargeSources(app(), member.api_key)).some((s) => group.workers.some((id: number) => s === `instance-${id}`)));
    const teamCharges = await chargeSources(app(), ownerTeamKey);
    for (const id of group.workers) assert.ok(teamCharges.includes(`instance-${id}`), `the team's charges show worker ${id}`);

    // The team deletes what the member made; its workers go with it.
    const del = await app().request('DELETE', `/api/v0/endptjobs/${ep.body.result}/`, { key: ownerTeamKey });
    assert.equal(del.status, 200, del.raw);
    for (const id of group.workers) assert.equal((await app().request('GET', `/api/v0/instances/${id}/`, { key: ownerTeamKey })).body.instances, null);
  });

  test('an instance a member rents in the team context is paid by the team owner, before and after the member leaves', async () => {
    const { owner, member, ownerTeamKey, memberTeamKey } = await teamWithMember(app(), 'renting');
    const m = await addMachine(app());
    const memberBefore = await balance(app(), member.api_key);
    const ownerBefore = await balance(app(), owner.api_key);
    const made = await rent(app(), offerFor(m, 1), {}, memberTeamKey);
    assert.equal(made.status, 200, made.raw);
    const id = made.body.new_contract as number;
    await app().advance(BOOT_MAX_S + 3600);
    assert.equal(await balance(app(), member.api_key), memberBefore, 'the member renting for the team pays nothing');
    const ownerAfterHour = await balance(app(), owner.api_key);
    assert.ok(ownerAfterHour < ownerBefore, 'the team owner pays');

    await removeMember(app(), owner.api_key, member.user.id);
    await app().advance(3600);
    assert.equal(await balance(app(), member.api_key), memberBefore, 'nor after leaving');
    assert.ok((await balance(app(), owner.api_key)) < ownerAfterHour);
    const stop = await app().request('PUT', `/api/v0/instances/${id}/`, { key: ownerTeamKey, body: { state: 'stopped' } });
    assert.equal(stop.status, 200, stop.raw);
    assert.equal((await app().request('DELETE', `/api/v0/instances/${id}/`, { key: ownerTeamKey })).status, 200);
  });

  test('what a member still pays for in the team (made before the owner paid) becomes the owner\'s when they are removed', async () => {
    const { owner, member, ownerTeamKey } = await teamWithMember(app(), 'legacy');
    const m = await addMachine(app(), { num_gpus: 2 });
    const team = (await app().request('GET', '/api/v0/team/members/', { key: ownerTeamKey })).body.team_id as number;
    // The member's team context as it was before a team's work was paid by its owner: a principal without the
    // team's account, so what it makes is on the member's bill (the rows a database from then still holds).
    const before = await app().store.db.transaction().execute(async (tx) => {
      const user = (await usersContract.byId(tx, member.user.id))!;
      const key = { id: 0, user_id: user.id, team_id: team, kind: 'user', instance_id: null, permissions: null } as unknown as Principal['key'];
      return { user, key, permissions: null, teamId: team, presentedKey: '' } as Principal;
    });
    const made = await app().store.db.transaction().execute((tx) => app().services.instances.createIn(tx, before, offerFor(m, 1), { image: 'ubuntu' }));
    const volumeOffer = (await app().request('POST', '/api/v0/volumes/search/', { key: ownerTeamKey, body: { machine_id: { eq: m.machine_id } } })).body.offers[0];
    const volume = await app().services.volumes.create(before, { id: volumeOffer.id, size: 50 });
    await app().advance(BOOT_MAX_S + 3600);
    const paid = await balance(app(), member.api_key);
    assert.ok(paid < 1000 * 1e6, 'the member paid for the legacy instance and volume while a member');

    await removeMember(app(), owner.api_key, member.user.id);
    const memberAfter = await balance(app(), member.api_key);
    const ownerAfter = await balance(app(), owner.api_key);
    await app().advance(3600);
    assert.equal(await balance(app(), member.api_key), memberAfter, 'after the removal the member pays nothing of it');
    assert.ok((await balance(app(), owner.api_key)) < ownerAfter, 'the owner does');
    const shown = await statusOf(app(), made.new_contract, ownerTeamKey);
    assert.equal(shown.actual_status, 'running', 'the instance runs on for the team');
    const ownKey = await app().request('PUT', `/api/v0/instances/${made.new_contract}/`, { key: made.instance_api_key, body: { state: 'running' } });
    assert.equal(ownKey.status, 200, `the instance's own key still works: ${ownKey.raw}`);
    const volumes = (await app().request('GET', '/api/v0/volumes/', { key: ownerTeamKey })).body.volumes.map((v: any) => v.id);
    assert.ok(volumes.includes(volume.id), JSON.stringify(volume));
    assert.ok((await chargeSources(app(), ownerTeamKey)).includes(`instance-${made.new_contract}`));
  });

  test("a team owner without credit: a member's rent in the team context is refused (402), whatever the member holds", async () => {
    const { owner, memberTeamKey } = await teamWithMember(app(), 'broke');
    assert.equal((await app().request('POST', '/_emu/credit', { body: { user_id: owner.user.id, amount: -1000 } })).status, 200);
    const refused = await rent(app(), offerFor(await addMachine(app()), 1), {}, memberTeamKey);
    assert.equal(refused.status, 402, refused.raw);
    assert.equal(refused.body.error, 'insufficient_credit');
  });
});
