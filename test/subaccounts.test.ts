// Subaccounts (docs/spec/client-compat-more.md §b): `vastai create subaccount` posts the sign-up route with
// `parent_id: "me"` and the parent's key; the parent lists its subaccounts (`{"users": [...]}`, credit a number) and
// funds them by transferring credit; the subaccount logs in with the credentials given once its address is verified;
// a host_only subaccount may host but not rent (403). Audit-logged for the parent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { lastCode } from './helpers/tfa-flow.js';
import { addMachine, offerFor, rent, rentOk } from './instances-fixtures.js';

let n = 0;
const email = (what: string) => `sub-${what}-${process.pid}-${n++}@example.com`;
const PASSWORD = 'correct horse battery';

forEachDialect('subaccounts', (app) => {
  /** What `vastai create subaccount --email E --username U --password P [--type host]` sends. */
  const createSub = (key: string, body: Record<string, unknown>) =>
    app().request('POST', '/api/v0/users/', { key, body: { username: 'bob', password: PASSWORD, host_only: false, parent_id: 'me', ...body } });

  test('a parent makes a subaccount, sees it with its balance, funds it; the subaccount logs in with its credentials', async () => {
    const parent = await app().createUser({ credit: 50 });
    const addr = email('bob');
    const made = await createSub(parent.api_key, { email: addr });
    assert.equal(made.status, 200, made.raw);
    assert.equal(made.body.success, true);
    const sub = made.body.user;
    assert.equal(sub.email, addr);
    assert.equal(sub.username, 'bob');
    assert.equal(sub.parent_id, parent.user.id);
    assert.equal(sub.host_only, false);
    assert.equal(sub.credit, 0);
    assert.equal(sub.email_verified, false);

    const listed = await app().request('GET', '/api/v0/subaccounts', { key: parent.api_key, query: { owner: 'me' } });
    assert.equal(listed.status, 200, listed.raw);
    assert.deepEqual(listed.body.users.map((u: any) => [u.id, u.username, u.parent_id, u.host_only, u.credit]), [[sub.id, 'bob', parent.user.id, false, 0]]);

    const funded = await app().request('PUT', '/api/v0/commands/transfer_credit/', { key: parent.api_key, body: { sender: 'me', recipient: String(sub.id), amount: 12.5 } });
    assert.equal(funded.status, 200, funded.raw);
    const after = (await app().request('GET', '/api/v0/subaccounts', { key: parent.api_key })).body.users[0];
    assert.equal(after.credit, 12.5);
    assert.equal(typeof after.balance, 'number');

    // Its credentials: the e-mail and password given, once the address is verified with the code sent to it.
    const early = await app().request('POST', '/api/v0/auth/login/', { key: null, body: { username: addr, password: PASSWORD } });
    assert.equal(early.body.error, 'email_not_verified');
    const code = await lastCode(app(), addr, 'email');
    assert.equal((await app().request('POST', '/api/v0/users/verify-email/', { key: null, body: { email: addr, code } })).status, 200);
    const session = await app().request('POST', '/api/v0/auth/login/', { key: null, body: { username: addr, password: PASSWORD, client: 'cli' } });
    assert.equal(session.status, 200, session.raw);
    const me = await app().request('GET', '/api/v0/users/current', { key: session.body.session_key });
    assert.equal(me.body.id, sub.id);
    assert.equal(me.body.credit, 12.5);

    // Only its parent sees it; it has no subaccounts of its own.
    assert.deepEqual((await app().request('GET', '/api/v0/subaccounts', { key: session.body.session_key })).body.users, []);
    const other = await app().createUser();
    assert.deepEqual((await app().request('GET', '/api/v0/subaccounts', { key: other.api_key })).body.users, []);
    const nested = await createSub(session.body.session_key, { email: email('nested') });
    assert.equal(nested.status, 403, nested.raw);
    assert.equal(nested.body.error, 'permission_denied');

    const audit = (await app().request('GET', '/api/v0/audit_logs/', { key: parent.api_key })).body;
    assert.ok(audit.some((e: any) => e.action === 'subaccount.created' && e.api_route === 'POST /api/v0/users/'), JSON.stringify(audit));
  });

  test('a host-only subaccount can host machines but not rent: instances and volumes answer 403', async () => {
    const parent = await app().createUser({ credit: 50 });
    const made = await createSub(parent.api_key, { email: email('host'), host_only: true });
    assert.equal(made.status, 200, made.raw);
    assert.equal(made.body.user.host_only, true);
    // The subaccount's own key: through a login session, as the subaccount would get it.
    const addr = made.body.user.email;
    const code = await lastCode(app(), addr, 'email');
    await app().request('POST', '/api/v0/users/verify-email/', { key: null, body: { email: addr, code } });
    const key = (await app().request('POST', '/api/v0/auth/login/', { key: null, body: { username: addr, password: PASSWORD, client: 'cli' } })).body.session_key;
    await app().request('PUT', '/api/v0/commands/transfer_credit/', { key: parent.api_key, body: { sender: 'me', recipient: String(made.body.user.id), amount: 20 } });

    const m = await addMachine(app(), { num_gpus: 1 });
    const refused = await rent(app(), offerFor(m, 1), {}, key);
    assert.equal(refused.status, 403, refused.raw);
    assert.equal(refused.body.error, 'permission_denied');
    assert.match(refused.body.msg, /host-only/);
    // Its status is read once per process (subaccounts-service.ts assertMayRent); asked again, the same answer.
    assert.equal((await rent(app(), offerFor(m, 1), {}, key)).status, 403);
    const volumes = await app().request('POST', '/api/v0/volumes/search/', { key, body: {} });
    const volumeOffer = volumes.body.offers[0].id;
    const vol = await app().request('PUT', '/api/v0/volumes/', { key, body: { id: volumeOffer, size: 10 } });
    assert.equal(vol.status, 403, vol.raw);
    // Hosting is allowed: its machines list answers.
    const machines = await app().request('GET', '/api/v0/machines', { key, query: { owner: 'me' } });
    assert.equal(machines.status, 200, machines.raw);
    // A subaccount that is not host-only rents as any account.
    const renter = await createSub(parent.api_key, { email: email('renter'), username: 'r' });
    assert.equal(renter.status, 200, renter.raw);
    assert.equal(renter.body.user.host_only, false);
    assert.equal((await rentOk(app(), offerFor(m, 1))).id > 0, true, 'the offer was still free');
  });

  test('refused: no key (401), a key without user_write, a team key, parent_id not "me", subaccount fields on a sign-up, a taken e-mail', async () => {
    const parent = await app().createUser({ credit: 5 });
    const noKey = await app().request('POST', '/api/v0/users/', { key: null, body: { email: email('x'), password: PASSWORD, parent_id: 'me' } });
    assert.equal(noKey.status, 401, noKey.raw);
    const readOnly = await app().request('POST', '/api/v0/auth/apikeys/', { key: parent.api_key, body: { permissions: { api: { user_read: {} } } } });
    const weak = await createSub(readOnly.body.key, { email: email('weak') });
    assert.equal(weak.status, 403, weak.raw);
    const team = await app().request('POST', '/api/v0/team/', { key: parent.api_key, body: { team_name: `subs-${n++}` } });
    assert.equal(team.status, 200, team.raw);
    const teamKey = await app().request('POST', '/api/v0/auth/apikeys/', { key: parent.api_key, body: { team_id: team.body.id } });
    const fromTeam = await createSub(teamKey.body.key, { email: email('team') });
    assert.equal(fromTeam.status, 403, fromTeam.raw);
    assert.equal((await app().request('GET', '/api/v0/subaccounts', { key: teamKey.body.key })).status, 403);
    const other = await app().createUser();
    const notMe = await createSub(parent.api_key, { email: email('notme'), parent_id: other.user.id });
    assert.equal(notMe.status, 403, notMe.raw);
    const own = await createSub(parent.api_key, { email: email('own'), parent_id: parent.user.id });
    assert.equal(own.status, 200, `parent_id may be the caller's own id: ${own.raw}`);
    for (const body of [{ email: null }, { password: 'short' }, { host_only: 'yes' }, { parent_id: 'you' }, { username: '' }]) {
      const res = await createSub(parent.api_key, { email: email('bad'), ...body });
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.raw}`);
    }
    const signUp = await app().request('POST', '/api/v0/users/', { key: null, body: { email: email('plain'), password: PASSWORD, host_only: true } });
    assert.equal(signUp.status, 400, signUp.raw);
    const taken = await createSub(parent.api_key, { email: other.user.email });
    assert.equal(taken.status, 409, taken.raw);
    const subs = (await app().request('GET', '/api/v0/subaccounts', { key: parent.api_key })).body.users;
    assert.deepEqual(subs.map((u: any) => u.id), [own.body.user.id], 'only the one made');
  });
});
