// The audit log (`GET /api/v0/audit_logs/`) and client addresses (`GET /api/v0/users/me/ipaddrs`), client-compat-more
// §b: security-relevant actions are recorded with key id, route, address and time, never with secret values; a user
// reads their own, a team's owner the team's; entries past the retention period go.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { AUDITED_ROUTES } from '../src/audit/audit-actions.js';
import { AUDIT_PRUNE_EVERY_S } from '../src/audit/audit-service.js';

const PASSWORD = 'correct horse battery staple 42';

forEachDialect('audit log', (app) => {
  test('every audited route exists (a renamed route fails here instead of leaving the log)', () => {
    const served = new Set(app().routes.map((r) => `${r.method} ${r.url}`));
    for (const route of Object.keys(AUDITED_ROUTES)) assert.ok(served.has(route), `${route} is not a route`);
  });

  test('key, env-var and credit actions are recorded with the key id and route; values are not', async () => {
    const u = await app().createUser({ credit: 10 });
    const other = await app().createUser();
    const made = await app().request('POST', '/api/v0/auth/apikeys/', { key: u.api_key, body: { name: 'audited' } });
    await app().request('DELETE', `/api/v0/auth/apikeys/${made.body.id}/`, { key: u.api_key, body: {} });
    await app().request('POST', '/api/v0/secrets/', { key: u.api_key, body: { key: 'TOKEN', value: 'super-secret-value-77' } });
    await app().request('PUT', '/api/v0/commands/transfer_credit/', { key: u.api_key, body: { sender: 'me', recipient: other.user.email, amount: 1 } });
    // A failure is not an action that happened.
    await app().request('DELETE', '/api/v0/auth/apikeys/999999/', { key: u.api_key, body: {} });

    const log = await app().request('GET', '/api/v0/audit_logs/', { key: u.api_key });
    assert.equal(log.status, 200, log.raw);
    assert.ok(Array.isArray(log.body));
    assert.deepEqual(log.body.map((e: any) => e.action), ['credit.transferred', 'env_var.created', 'api_key.revoked', 'api_key.created']);
    const mine = (await app().request('GET', '/api/v0/auth/apikeys/', { key: u.api_key })).body.apikeys.find((k: any) => k.name === 'emulator');
    for (const e of log.body) {
      assert.equal(e.api_key_id, mine.id);
      assert.equal(typeof e.ip_address, 'string');
      assert.ok(e.ip_address.length > 0);
      assert.equal(e.created_at, app().clock.now());
    }
    assert.equal(log.body[2].api_route, 'DELETE /api/v0/auth/apikeys/:id/');
    assert.deepEqual(log.body[2].args.params, { id: made.body.id });
    assert.deepEqual(log.body[1].args.fields, ['key', 'value']);
    assert.doesNotMatch(log.raw, /super-secret-value-77/);
    // Another user sees none of it.
    assert.deepEqual((await app().request('GET', '/api/v0/audit_logs/', { key: other.api_key })).body, []);
  });

  test('actions finishing together are each recorded, with their own route and values, when their replies come', async () => {
    const u = await app().createUser({ credit: 10 });
    const names = Array.from({ length: 12 }, (_, i) => `together-${i}`);
    // Sent at once: each reply waits for its own entry.
    const made = await Promise.all(names.map((name) => app().request('POST', '/api/v0/auth/apikeys/', { key: u.api_key, body: { name } })));
    for (const r of made) assert.equal(r.status, 200, r.raw);
    const log = (await app().request('GET', '/api/v0/audit_logs/', { key: u.api_key })).body as any[];
    assert.equal(log.length, names.length);
    assert.deepEqual(log.map((e) => e.action), names.map(() => 'api_key.created'));
    assert.deepEqual(log.map((e) => e.args.fields), names.map(() => ['name']));
    assert.equal(new Set(log.map((e) => e.id)).size, names.length, 'one entry each');
  });

  test('a password login is recorded for the user; the addresses list shows where requests came from', async () => {
    const email = `audit-login-${process.pid}-${Date.now()}@example.com`;
    const u = await app().createUser({ email, password: PASSWORD });
    const res = await app().request('POST', '/api/v0/auth/login/', { key: null, body: { username: email, password: PASSWORD, client: 'cli' } });
    assert.equal(res.status, 200, res.raw);
    const bad = await app().request('POST', '/api/v0/auth/login/', { key: null, body: { username: email, password: 'wrong password here' } });
    assert.notEqual(bad.status, 200);
    const log = (await app().request('GET', '/api/v0/audit_logs/', { key: u.api_key })).body;
    assert.deepEqual(log.map((e: any) => e.action), ['login']);
    assert.equal(log[0].api_key_id, null);
    assert.doesNotMatch(JSON.stringify(log), new RegExp(PASSWORD));

    const ips = await app().request('GET', '/api/v0/users/me/ipaddrs', { key: u.api_key, query: { owner: 'me' } });
    assert.equal(ips.status, 200, ips.raw);
    assert.equal(ips.body.results.length, 1);
    assert.equal(typeof ips.body.results[0].ip, 'string');
    assert.equal(ips.body.results[0].first_location, null);
  });

  test('in team context the team\'s log is for its owner; members are refused', async () => {
    const owner = await app().createUser();
    const team = await app().request('POST', '/api/v0/team/', { key: owner.api_key, body: { team_name: 'audited' } });
    const ownerTeamKey = (await app().request('POST', '/api/v0/auth/apikeys/', { key: owner.api_key, body: { team_id: team.body.id } })).body.key;
    await app().request('POST', '/api/v0/team/roles/', { key: ownerTeamKey, body: { name: 'viewer', permissions: ['user_read'] } });
    const m = await app().createUser();
    await app().request('POST', `/api/v0/team/invite/?email=${encodeURIComponent(m.user.email)}&role=member`, { key: ownerTeamKey });
    const code = (await app().request('GET', `/_emu/outbox?to=${encodeURIComponent(m.user.email)}`)).body.messages.at(-1).code;
    await app().request('POST', '/api/v0/team/invitations/accept/', { key: m.api_key, body: { code } });
    const memberKey = (await app().request('POST', '/api/v0/auth/apikeys/', { key: m.api_key, body: { team_id: team.body.id } })).body.key;

    const teamLog = await app().request('GET', '/api/v0/audit_logs/', { key: ownerTeamKey });
    assert.equal(teamLog.status, 200, teamLog.raw);
    assert.deepEqual(teamLog.body.map((e: any) => e.action).sort(), ['team.member_invited', 'team.role_created']);
    // The team key itself was made with the owner's personal key: that is in the owner's own log.
    const personal = (await app().request('GET', '/api/v0/audit_logs/', { key: owner.api_key })).body;
    assert.deepEqual(personal.map((e: any) => e.action), ['api_key.created']);
    const refused = await app().request('GET', '/api/v0/audit_logs/', { key: memberKey });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.error, 'permission_denied');
  });

  test('entries older than the retention period are deleted', async () => {
    const u = await app().createUser();
    await app().request('POST', '/api/v0/secrets/', { key: u.api_key, body: { key: 'OLD', value: 'x' } });
    await app().advance(app().config.auditRetentionDays * 86_400 + AUDIT_PRUNE_EVERY_S + 1);
    await app().request('POST', '/api/v0/secrets/', { key: u.api_key, body: { key: 'NEW', value: 'y' } });
    const log = (await app().request('GET', '/api/v0/audit_logs/', { key: u.api_key })).body;
    assert.deepEqual(log.map((e: any) => e.args.fields), [['key', 'value']]);
    assert.equal(log.length, 1);
  });
});

forEachDialect('cloud connections', (app) => {
  test('`show connections` gets a bare list: empty, since no route makes a connection yet', async () => {
    const u = await app().createUser();
    const r = await app().request('GET', '/api/v0/users/cloud_integrations/', { key: u.api_key });
    assert.equal(r.status, 200, r.raw);
    assert.deepEqual(r.body, []);
    assert.equal((await app().request('GET', '/api/v0/users/cloud_integrations/', { key: null })).status, 401);
  });
});
