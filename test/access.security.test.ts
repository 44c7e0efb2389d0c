// Threats: privilege escalation through API keys, team roles and invitations (a key or member granting itself more
// than it holds, using another team's or another address's grants), and revocation that a second process misses.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { buildApp, type Built } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { VirtualClock } from '../src/platform/clock.js';
import { SecretBox } from '../src/platform/crypto.js';
import type { Store } from '../src/platform/db/connect.js';
import { openDatabase } from '../src/database.js';
import { cryptoRandom } from '../src/platform/random.js';
import { EMU_OWNER_CREDIT } from '../src/users/users-service.js';
import { DIALECTS, dropSchema, forEachDialect, OWNER_KEY, PG_URL, T0, uniqueSchema, type TestApp } from './helpers/harness.js';

const doc = (...cats: string[]) => ({ api: Object.fromEntries(cats.map((c) => [c, {}])) });

async function teamWithMember(t: TestApp, role: string) {
  const owner = await t.createUser();
  const team = await t.request('POST', '/api/v0/team/', { key: owner.api_key, body: { team_name: 'sec' } });
  const m = await t.createUser();
  await t.request('POST', `/api/v0/team/invite/?email=${encodeURIComponent(m.user.email)}&role=${role}`, { key: owner.api_key });
  const code = (await t.request('GET', `/_emu/outbox?to=${encodeURIComponent(m.user.email)}`)).body.messages.at(-1).code;
  const acc = await t.request('POST', '/api/v0/team/invitations/accept/', { key: m.api_key, body: { code } });
  assert.equal(acc.status, 200, acc.raw);
  const k = await t.request('POST', '/api/v0/auth/apikeys/', { key: m.api_key, body: { team_id: team.body.id } });
  return { owner, teamId: team.body.id as number, member: m, teamKey: k.body.key as string };
}

forEachDialect('access control attacks', (app) => {
  test('a personal key cannot make a key for a team its user is not in (404)', async () => {
    const { teamId } = await teamWithMember(app(), 'member');
    const stranger = await app().createUser();
    const res = await app().request('POST', '/api/v0/auth/apikeys/', { key: stranger.api_key, body: { team_id: teamId } });
    assert.equal(res.status, 404);
    assert.equal(res.body.error, 'not_found');
  });

  test('a team key cannot make keys for another team, nor keys beyond the role', async () => {
    const { teamKey } = await teamWithMember(app(), 'member');
    const other = await teamWithMember(app(), 'member');
    const cross = await app().request('POST', '/api/v0/auth/apikeys/', { key: teamKey, body: { team_id: other.teamId } });
    assert.equal(cross.status, 403);
    const beyond = await app().request('POST', '/api/v0/auth/apikeys/', { key: teamKey, body: { permissions: doc('billing_write') } });
    assert.equal(beyond.status, 403);
    assert.equal(beyond.body.error, 'permission_denied');
  });

  test('a member cannot grant roles or rights they lack', async () => {
    const { owner, teamKey } = await teamWithMember(app(), 'manager'); // manager: everything but billing_write
    const role = await app().request('POST', '/api/v0/team/roles/', { key: teamKey, body: { name: 'payer', permissions: doc('billing_write') } });
    assert.equal(role.status, 403);
    const ownerRole = await app().request('POST', '/api/v0/team/invite/?email=x@example.com&role=owner', { key: teamKey });
    assert.equal(ownerRole.status, 400);
    // The owner makes a role with billing_write; the manager can neither hand it out nor rewrite it.
    const payer = await app().request('POST', '/api/v0/team/roles/', { key: owner.api_key, body: { name: 'payer', permissions: doc('billing_write', 'misc') } });
    assert.equal(payer.status, 200);
    assert.equal((await app().request('POST', '/api/v0/team/invite/?email=y@example.com&role=payer', { key: teamKey })).status, 403);
    assert.equal((await app().request('PUT', `/api/v0/team/roles/${payer.body.id}/`, { key: teamKey, body: { permissions: doc('misc') } })).status, 403);
    assert.equal((await app().request('DELETE', '/api/v0/team/roles/payer/', { key: teamKey })).status, 403);
    // A manager cannot delete the team nor remove its owner.
    assert.equal((await app().request('DELETE', '/api/v0/team/', { key: teamKey })).status, 403);
  });

  test('team keys cannot create teams or accept invitations (personal actions)', async () => {
    const { teamKey } = await teamWithMember(app(), 'manager');
    const res = await app().request('POST', '/api/v0/team/', { key: teamKey, body: { team_name: 'nested' } });
    assert.equal(res.status, 403);
    const acc = await app().request('POST', '/api/v0/team/invitations/accept/', { key: teamKey, body: { code: 'gpt_inv_x' } });
    assert.equal(acc.status, 403);
  });

  test('an invitation code works once, only for the invited address, only until it expires', async () => {
    const owner = await app().createUser();
    await app().request('POST', '/api/v0/team/', { key: owner.api_key, body: { team_name: 'inv' } });
    const invited = await app().createUser();
    const thief = await app().createUser();
    const inv = await app().request('POST', `/api/v0/team/invite/?email=${encodeURIComponent(invited.user.email)}&role=member`, { key: owner.api_key });
    const code = (await app().request('GET', `/_emu/outbox?to=${encodeURIComponent(invited.user.email)}`)).body.messages.at(-1).code;
    assert.ok(!inv.raw.includes(code), 'the code is in the e-mail only');
    const stolen = await app().request('POST', '/api/v0/team/invitations/accept/', { key: thief.api_key, body: { code } });
    assert.equal(stolen.status, 404);
    assert.equal((await app().request('POST', '/api/v0/team/invitations/accept/', { key: invited.api_key, body: { code } })).status, 200);
    assert.equal((await app().request('POST', '/api/v0/team/invitations/accept/', { key: invited.api_key, body: { code } })).status, 404);

    const late = await app().createUser();
    await app().request('POST', `/api/v0/team/invite/?email=${encodeURIComponent(late.user.email)}&role=member`, { key: owner.api_key });
    const lateCode = (await app().request('GET', `/_emu/outbox?to=${encodeURIComponent(late.user.email)}`)).body.messages.at(-1).code;
    await app().advance(7 * 86400 + 1);
    assert.equal((await app().request('POST', '/api/v0/team/invitations/accept/', { key: late.api_key, body: { code: lateCode } })).status, 404);
  });

  test('a scoped key cannot revoke a key with more rights; listings never carry secrets or hashes', async () => {
    const u = await app().createUser();
    const scoped = await app().request('POST', '/api/v0/auth/apikeys/', { key: u.api_key, body: { permissions: doc('user_read', 'user_write') } });
    const list = await app().request('GET', '/api/v0/auth/apikeys/', { key: u.api_key });
    const full = list.body.apikeys.find((k: any) => k.name === 'emulator');
    const del = await app().request('DELETE', `/api/v0/auth/apikeys/${full.id}`, { key: scoped.body.key });
    assert.equal(del.status, 403);
    assert.equal((await app().request('GET', '/api/v0/users/current', { key: u.api_key })).status, 200);
    assert.ok(!list.raw.includes('key_hash') && !list.raw.includes(u.api_key) && !list.raw.includes(scoped.body.key));
  });

  test('a removed member cannot come back through old keys, even after a role change', async () => {
    const { owner, member, teamKey } = await teamWithMember(app(), 'member');
    await app().request('DELETE', `/api/v0/team/members/${member.user.id}/`, { key: owner.api_key });
    assert.equal((await app().request('GET', '/api/v0/team/roles-full/', { key: teamKey })).status, 401);
  });
});

/** Two apps (as two processes would) on one database: a SQLite file, or one PostgreSQL schema. */
for (const dialect of DIALECTS) {
  describe(`revocation across processes [${dialect}]`, () => {
    let dir: string | undefined;
    let schema: string | undefined;
    const apps: { built: Built; store: Store }[] = [];
    before(async () => {
      dir = dialect === 'sqlite' ? mkdtempSync(join(tmpdir(), 'gpuplane-access-')) : undefined;
      schema = dialect === 'postgres' ? uniqueSchema() : undefined;
      const config = loadConfig({
        GPUPLANE_DATABASE_URL: dialect === 'postgres' ? PG_URL : `sqlite:${join(dir!, 'db.sqlite')}`,
        GPUPLANE_CLOCK: 'virtual',
        GPUPLANE_CLOCK_START: String(T0),
        GPUPLANE_BOOTSTRAP_API_KEY: OWNER_KEY,
        GPUPLANE_SECRET_KEY: 'test-secret-key-0123456789',
        GPUPLANE_LOG_LEVEL: 'silent',
        GPUPLANE_SIM_MACHINES: '5',
        GPUPLANE_PORT: '0',
      });
      for (let i = 0; i < 2; i++) {
        const store = await openDatabase(config.databaseUrl, { pgSchema: schema, pgPoolSize: 3 });
        const clock = new VirtualClock(T0);
        const built = await buildApp({ config, store, clock, random: cryptoRandom, log: pino({ level: 'silent' }), secretBox: new SecretBox(config.secretKey!, cryptoRandom) });
        await built.services.users.ensureOwner(config.bootstrapApiKey, EMU_OWNER_CREDIT);
        apps.push({ built, store });
      }
    });
    after(async () => {
      for (const a of apps) {
        await a.built.scheduler.stop();
        await a.built.app.close();
        await a.store.close();
      }
      if (schema) await dropSchema(schema);
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    const call = async (i: number, method: string, url: string, key: string, body?: unknown) => {
      const res = await apps[i].built.app.inject({
        method: method as 'GET',
        url,
        headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        payload: body !== undefined ? JSON.stringify(body) : undefined,
      });
      return { status: res.statusCode, body: JSON.parse(res.body) };
    };

    test('a key revoked in one process is refused by the other on its next request', async () => {
      const k = await call(0, 'POST', '/api/v0/auth/apikeys/', OWNER_KEY, { name: 'shared' });
      assert.equal(k.status, 200);
      assert.equal((await call(1, 'GET', '/api/v0/users/current/', k.body.key)).status, 200);
      assert.equal((await call(0, 'DELETE', `/api/v0/auth/apikeys/${k.body.id}/`, OWNER_KEY, {})).status, 200);
      const after = await call(1, 'GET', '/api/v0/users/current/', k.body.key);
      assert.equal(after.status, 401);
      assert.equal(after.body.error, 'auth_error');
    });

    test("a role change in one process bounds the member's team key in the other at once", async () => {
      const team = await call(0, 'POST', '/api/v0/team/', OWNER_KEY, { team_name: 'x-proc' });
      // The owner's team key, made in the other process; the owner role is fixed, so a member shows the narrowing.
      const k = await call(1, 'POST', '/api/v0/auth/apikeys/', OWNER_KEY, { team_id: team.body.id });
      assert.equal(k.status, 200);
      const user = await call(0, 'POST', '/_emu/users', OWNER_KEY, { email: `xproc${Date.now()}@example.com` });
      assert.equal((await call(0, 'POST', `/api/v0/team/invite/?email=${encodeURIComponent(user.body.user.email)}&role=member`, k.body.key)).status, 200);
      const code = (await call(0, 'GET', `/_emu/outbox?to=${encodeURIComponent(user.body.user.email)}`, OWNER_KEY)).body.messages.at(-1).code;
      assert.equal((await call(1, 'POST', '/api/v0/team/invitations/accept/', user.body.api_key, { code })).status, 200);
      const mk = await call(1, 'POST', '/api/v0/auth/apikeys/', user.body.api_key, { team_id: team.body.id });
      assert.equal((await call(1, 'GET', '/api/v0/team/members/', mk.body.key)).status, 200);
      const role = await call(0, 'GET', '/api/v0/team/roles/member/', k.body.key);
      assert.equal((await call(0, 'PUT', `/api/v0/team/roles/${role.body.id}/`, k.body.key, { permissions: doc('misc') })).status, 200);
      assert.equal((await call(1, 'GET', '/api/v0/team/members/', mk.body.key)).status, 403);
    });
  });
}
