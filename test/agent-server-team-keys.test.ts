// Issue 31 item 4, "team members with instance access use their own keys": a real host's desired state gives an
// instance made in a team's context the account SSH keys of every member whose role allows instance_write (the owner's
// role is full access), besides its renter's and its own; a member whose role lacks it gets nothing in; personal
// instances keep their renter's keys only. The desired state follows the members: a key added, changed or removed, a
// member joining, leaving or changing role, a role's rights changing (the fingerprint that a renewed poll reuses a
// state by covers them all), and on PostgreSQL each such write notifies the team's instances' machines
// (migration 0047_team_keys_notify), which the held long-polls of every process listen to.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { sql } from 'kysely';
import { createTestApp, forEachDialect, type TestApp } from './helpers/harness.js';
import { desired, hardware, hostWithMachine as hostOf, type Host } from './agent-server-fixtures.js';
import { rentOk } from './instances-fixtures.js';
import { desiredChanges, type DesiredChanges } from '../src/agent-server/agent-server-changes.js';

/** A fresh ed25519 public key line, as `ssh-keygen` writes it. */
function sshKey(comment: string): string {
  const der = generateKeyPairSync('ed25519').publicKey.export({ format: 'der', type: 'spki' });
  const raw = der.subarray(der.length - 32);
  const str = (b: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, b.length]), b]);
  return `ssh-ed25519 ${Buffer.concat([str(Buffer.from('ssh-ed25519')), str(raw)]).toString('base64')} ${comment}`;
}

async function addKey(t: TestApp, apiKey: string, line: string): Promise<number> {
  const res = await t.request('POST', '/api/v0/ssh/', { key: apiKey, body: { ssh_key: line } });
  assert.equal(res.status, 200, res.raw);
  return res.body.key.id as number;
}

/** A team made by a new user with credit, and the owner's team key (to rent in the team's context). */
async function team(t: TestApp, name: string) {
  const owner = await t.createUser({ credit: 1000 });
  const res = await t.request('POST', '/api/v0/team/', { key: owner.api_key, body: { team_name: name } });
  assert.equal(res.status, 200, res.raw);
  const teamKey = (await t.request('POST', '/api/v0/auth/apikeys/', { key: owner.api_key, body: { team_id: res.body.id } })).body.key as string;
  return { owner, id: res.body.id as number, teamKey };
}

/** A new user invited with `role` who accepts (the accept writes team_members). */
async function invite(t: TestApp, ownerKey: string, role: string) {
  const m = await t.createUser({ credit: 100 });
  await join(t, ownerKey, m, role);
  return m;
}

async function join(t: TestApp, ownerKey: string, m: { user: any; api_key: string }, role: string): Promise<void> {
  const inv = await t.request('POST', `/api/v0/team/invite/?email=${encodeURIComponent(m.user.email)}&role=${role}`, { key: ownerKey });
  assert.equal(inv.status, 200, inv.raw);
  const code = (await t.request('GET', `/_emu/outbox?to=${encodeURIComponent(m.user.email)}`)).body.messages.at(-1).code;
  const acc = await t.request('POST', '/api/v0/team/invitations/accept/', { key: m.api_key, body: { code } });
  assert.equal(acc.status, 200, acc.raw);
}

/** A role of the team that can see instances but not act on them. */
async function viewerRole(t: TestApp, ownerKey: string): Promise<number> {
  const res = await t.request('POST', '/api/v0/team/roles/', { key: ownerKey, body: { name: 'viewer', permissions: { api: { instance_read: {}, team_read: {} } } } });
  assert.equal(res.status, 200, res.raw);
  return res.body.id as number;
}

/** A registered, listed machine with four GPUs: room for a few one-GPU instances. */
const hostWithMachine = (t: TestApp) => {
  const base = hardware();
  return hostOf(t, { hw: { num_gpus: 4, gpus: [0, 1, 2, 3].map((index) => ({ ...base.gpus![0], index, uuid: `GPU-${index}` })) } });
};

const keysOf = async (t: TestApp, host: Host, id: number): Promise<string[]> => {
  const inst = (await desired(t, host)).instances.find((i: any) => i.instance_id === id);
  assert.ok(inst, `instance ${id} in the desired state`);
  return [...inst.ssh_keys].sort();
};
const sorted = (...keys: string[]) => [...keys].sort();

forEachDialect('desired state: team members\' keys', (app) => {
  // First: the poll's watch of the change feed ends with the writes of the tests after it, not with the suite's
  // database (a feed still polling a closed SQLite file would throw).
  test('a held long-poll answers when a team member with access adds a key', async () => {
    const host = await hostWithMachine(app());
    const tm = await team(app(), 'held-team');
    const member = await invite(app(), tm.owner.api_key, 'member');
    const { id } = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox' }, tm.teamKey);
    const d = await desired(app(), host);
    assert.deepEqual(d.instances.find((i: any) => i.instance_id === id).ssh_keys, []);
    const held = desired(app(), host, { after: String(d.version), wait: '30' });
    await new Promise((r) => setImmediate(r));
    const key = sshKey('member@held');
    await addKey(app(), member.api_key, key);
    const got = await held;
    assert.notEqual(got.version, d.version);
    assert.deepEqual(got.instances.find((i: any) => i.instance_id === id).ssh_keys, [key]);
  });

  test("a team's instance lets in the members whose role allows instance_write, with their account keys; a viewer and an outsider stay out; personal instances keep their renter's keys", async () => {
    const host = await hostWithMachine(app());
    const tm = await team(app(), 'keys-team');
    const member = await invite(app(), tm.owner.api_key, 'member');
    const manager = await invite(app(), tm.owner.api_key, 'manager');
    await viewerRole(app(), tm.owner.api_key);
    const viewer = await invite(app(), tm.owner.api_key, 'viewer');
    const outsider = await app().createUser({ credit: 100 });
    const k = {
      owner: sshKey('owner@laptop'), member: sshKey('member@laptop'), manager: sshKey('manager@laptop'),
      viewer: sshKey('viewer@laptop'), outsider: sshKey('outsider@laptop'), attached: sshKey('attached@ci'),
    };
    await addKey(app(), tm.owner.api_key, k.owner);
    await addKey(app(), member.api_key, k.member);
    await addKey(app(), manager.api_key, k.manager);
    await addKey(app(), viewer.api_key, k.viewer);
    await addKey(app(), outsider.api_key, k.outsider);

    const teamInst = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox' }, tm.teamKey);
    const ownerOwn = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox' }, tm.owner.api_key);
    const memberOwn = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox' }, member.api_key);
    const attached = await app().request('POST', `/api/v0/instances/${teamInst.id}/ssh/`, { key: tm.teamKey, body: { ssh_key: k.attached } });
    assert.equal(attached.status, 200, attached.raw);

    assert.deepEqual(await keysOf(app(), host, teamInst.id), sorted(k.owner, k.member, k.manager, k.attached));
    assert.deepEqual(await keysOf(app(), host, ownerOwn.id), [k.owner], "the owner's personal instance: their keys alone");
    assert.deepEqual(await keysOf(app(), host, memberOwn.id), [k.member], "a member's personal instance: their keys alone");
  });

  test("the team instance's keys follow the members: a key added, changed, removed; a role given or taken; a role's rights; a member leaving", async () => {
    const host = await hostWithMachine(app());
    const tm = await team(app(), 'moving-team');
    const member = await invite(app(), tm.owner.api_key, 'member');
    const viewerRoleId = await viewerRole(app(), tm.owner.api_key);
    const viewer = await invite(app(), tm.owner.api_key, 'viewer');
    const ownerKey = sshKey('owner@laptop');
    await addKey(app(), tm.owner.api_key, ownerKey);
    const { id } = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox' }, tm.teamKey);
    const own = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox' }, tm.owner.api_key);
    // Each read below comes after a state was built: a change the fingerprint missed would answer the old one.
    assert.deepEqual(await keysOf(app(), host, id), [ownerKey]);

    // A member's key added: in.
    const first = sshKey('member@one');
    const firstId = await addKey(app(), member.api_key, first);
    assert.deepEqual(await keysOf(app(), host, id), sorted(ownerKey, first));
    // Changed (a later second, as a person edits it): the new line replaces the old.
    await app().advance(1);
    const edited = sshKey('member@edited');
    const upd = await app().request('PUT', `/api/v0/ssh/${firstId}/`, { key: member.api_key, body: { id: firstId, ssh_key: edited } });
    assert.equal(upd.status, 200, upd.raw);
    assert.deepEqual(await keysOf(app(), host, id), sorted(ownerKey, edited));
    // Removed: out.
    assert.equal((await app().request('DELETE', `/api/v0/ssh/${firstId}/`, { key: member.api_key })).status, 200);
    assert.deepEqual(await keysOf(app(), host, id), [ownerKey]);
    const second = sshKey('member@two');
    await addKey(app(), member.api_key, second);
    assert.deepEqual(await keysOf(app(), host, id), sorted(ownerKey, second));

    // The viewer has a key but no instance_write: out, until given the member role; back out when given the viewer role.
    const viewerKey = sshKey('viewer@laptop');
    await addKey(app(), viewer.api_key, viewerKey);
    assert.deepEqual(await keysOf(app(), host, id), sorted(ownerKey, second));
    const toMember = await app().request('PUT', `/api/v0/team/members/${viewer.user.id}/`, { key: tm.owner.api_key, body: { role: 'member' } });
    assert.equal(toMember.status, 200, toMember.raw);
    assert.deepEqual(await keysOf(app(), host, id), sorted(ownerKey, second, viewerKey));
    const back = await app().request('PUT', `/api/v0/team/members/${viewer.user.id}/`, { key: tm.owner.api_key, body: { role: 'viewer' } });
    assert.equal(back.status, 200, back.raw);
    assert.deepEqual(await keysOf(app(), host, id), sorted(ownerKey, second));
    // The viewer role itself gains instance_write: its members are in; and loses it again: out.
    const grant = await app().request('PUT', `/api/v0/team/roles/${viewerRoleId}/`, { key: tm.owner.api_key, body: { permissions: { api: { instance_read: {}, instance_write: {}, team_read: {} } } } });
    assert.equal(grant.status, 200, grant.raw);
    assert.deepEqual(await keysOf(app(), host, id), sorted(ownerKey, second, viewerKey));
    const revoke = await app().request('PUT', `/api/v0/team/roles/${viewerRoleId}/`, { key: tm.owner.api_key, body: { permissions: { api: { instance_read: {}, team_read: {} } } } });
    assert.equal(revoke.status, 200, revoke.raw);
    assert.deepEqual(await keysOf(app(), host, id), sorted(ownerKey, second));

    // The member leaves the team: their keys go.
    const removed = await app().request('DELETE', `/api/v0/team/members/${member.user.id}/`, { key: tm.owner.api_key });
    assert.equal(removed.status, 200, removed.raw);
    assert.deepEqual(await keysOf(app(), host, id), [ownerKey]);
    // Through all of it the owner's personal instance had the owner's keys alone.
    assert.deepEqual(await keysOf(app(), host, own.id), [ownerKey]);
  });

});

/** A machine id no database has: a write naming it marks that what was committed before it has been heard. */
const MARKER_MACHINE = 999_999_998;
let markers = 0;

/**
 * The machines the feed names for `write`: everything reported until a marker written after it arrives
 * (PostgreSQL delivers notifications in commit order), so a write that notifies nothing fails rather than hangs.
 */
async function heard(t: TestApp, feed: DesiredChanges, write: () => Promise<unknown>): Promise<Set<number>> {
  const got = new Set<number>();
  const done = new Promise<void>((resolve) => {
    const off = feed.subscribe((ids) => {
      for (const id of ids ?? []) got.add(id);
      if (got.has(MARKER_MACHINE)) {
        off();
        resolve();
      }
    });
  });
  await write();
  await sql`insert into agent_log_requests (request_id, machine_id, instance_id, log_request_id, expires_at) values (${`tk_marker_${++markers}`}, ${MARKER_MACHINE}, 0, ${100_000 + markers}, 1)`.execute(t.store.db);
  await done;
  got.delete(MARKER_MACHINE);
  return got;
}

// PostgreSQL alone (NOTIFY): without GPUPLANE_TEST_POSTGRES_URL, createTestApp throws and the test fails naming it.
test("postgres: a team member's key, joining, leaving, role and role rights notify the machines of the team's live instances", async () => {
  const t = await createTestApp('postgres');
  const feed = await desiredChanges(t.store, { hub: t.services.instances.hub, pollMs: 20, warn: (err) => assert.fail(String(err)) });
  try {
    const teamHost = await hostWithMachine(t);
    const ownHost = await hostWithMachine(t);
    const idleHost = await hostWithMachine(t);
    const tm = await team(t, 'notify-team');
    const viewerRoleId = await viewerRole(t, tm.owner.api_key);
    const member = await t.createUser({ credit: 100 });
    await rentOk(t, teamHost.machineId * 100 + 1, { image: 'busybox' }, tm.teamKey);
    // The member's own instance elsewhere: their key goes there as a renter's (0037), and to the team's machine.
    const memberOwn = await rentOk(t, ownHost.machineId * 100 + 1, { image: 'busybox' }, member.api_key);
    assert.ok(memberOwn.id);
    const only = (...hosts: Host[]) => new Set(hosts.map((h) => h.machineId));
    // The rents' own notifications, heard before the writes under test.
    await heard(t, feed, async () => undefined);

    // Joining (team_members insert): the team's machine.
    assert.deepEqual(await heard(t, feed, () => join(t, tm.owner.api_key, member, 'member')), only(teamHost));
    // The member's key (ssh_keys): their own instance's machine and the team's; a machine of neither is not named.
    const line = sshKey('member@notify');
    let keyId = 0;
    assert.deepEqual(await heard(t, feed, async () => (keyId = await addKey(t, member.api_key, line))), only(teamHost, ownHost));
    assert.deepEqual(
      await heard(t, feed, () => t.request('PUT', `/api/v0/ssh/${keyId}/`, { key: member.api_key, body: { id: keyId, ssh_key: sshKey('member@edited') } })),
      only(teamHost, ownHost),
    );
    // A role change (team_members update) and a role's rights (team_roles update).
    assert.deepEqual(await heard(t, feed, () => t.request('PUT', `/api/v0/team/members/${member.user.id}/`, { key: tm.owner.api_key, body: { role: 'viewer' } })), only(teamHost));
    assert.deepEqual(
      await heard(t, feed, () => t.request('PUT', `/api/v0/team/roles/${viewerRoleId}/`, { key: tm.owner.api_key, body: { permissions: { api: { instance_read: {}, instance_write: {} } } } })),
      only(teamHost),
    );
    // Leaving (team_members delete): the team's machine; the member's key no longer names it.
    assert.deepEqual(await heard(t, feed, () => t.request('DELETE', `/api/v0/team/members/${member.user.id}/`, { key: tm.owner.api_key })), only(teamHost));
    assert.deepEqual(await heard(t, feed, () => t.request('DELETE', `/api/v0/ssh/${keyId}/`, { key: member.api_key })), only(ownHost));
    assert.ok(!only(teamHost, ownHost).has(idleHost.machineId));
  } finally {
    await feed.close();
    await t.close();
  }
});
