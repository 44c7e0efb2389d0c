// Behaviour of GET /api/v0/users/current (spec: Show current user; client-compat: Account), and the owner account
// created on an empty database (issue 2 §5).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { forEachDialect, OWNER_KEY } from './helpers/harness.js';
import { call, serve } from './helpers/spawn.js';

forEachDialect('users/current', (app) => {
  test('owner: the spec user object plus api_key echoing the presented key', async () => {
    const res = await app().request('GET', '/api/v0/users/current/');
    assert.equal(res.status, 200);
    const u = res.body;
    assert.equal(typeof u.id, 'number');
    assert.equal(u.email, 'owner@gpuplane.local');
    assert.equal(typeof u.full_name, 'string');
    assert.equal(typeof u.credit, 'number');
    assert.equal(u.ssh_key, null);
    assert.equal(u.tfa_status, 'disabled');
    assert.equal(typeof u.email_verified_at, 'number');
    assert.equal(u.is_admin, true);
    assert.equal(u.api_key, OWNER_KEY);
  });

  test('served with and without the trailing slash', async () => {
    const a = await app().request('GET', '/api/v0/users/current');
    const b = await app().request('GET', '/api/v0/users/current/');
    assert.equal(a.status, 200);
    assert.deepEqual(a.body, b.body);
  });

  test('a new emulator user: credit 100 by default, not admin, e-mail verified, key echoed', async () => {
    const { user, api_key } = await app().createUser({ full_name: 'Ada' });
    const res = await app().request('GET', '/api/v0/users/current', { key: api_key });
    assert.equal(res.status, 200);
    assert.equal(res.body.id, user.id);
    assert.equal(res.body.full_name, 'Ada');
    assert.equal(res.body.credit, 100);
    assert.equal(res.body.is_admin, false);
    assert.equal(res.body.api_key, api_key);
    assert.notEqual(res.body.email_verified_at, null);
  });

  test('email_verified false gives email_verified_at null; credit keeps fractions exactly', async () => {
    const { api_key } = await app().createUser({ email_verified: false, credit: 12.345678 });
    const res = await app().request('GET', '/api/v0/users/current', { key: api_key });
    assert.equal(res.body.email_verified_at, null);
    assert.equal(res.body.credit, 12.345678);
  });

  test('?api_key= in the URL is ignored: the header decides', async () => {
    const { api_key } = await app().createUser();
    const res = await app().request('GET', `/api/v0/users/current?api_key=${api_key}`);
    assert.equal(res.body.api_key, OWNER_KEY);
    const none = await app().request('GET', `/api/v0/users/current?api_key=${api_key}`, { key: null });
    assert.equal(none.status, 401);
  });

  test('reply Content-Type is exactly application/json', async () => {
    const res = await app().request('GET', '/api/v0/users/current');
    assert.equal(res.headers['content-type'], 'application/json');
  });
});

test('on an empty database the owner is created with a generated key, printed once', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gpuplane-owner-'));
  const env = { GPUPLANE_DATABASE_URL: `sqlite:${join(dir, 'gpuplane.db')}`, GPUPLANE_SIM_MACHINES: '0', GPUPLANE_BOOTSTRAP_API_KEY: '' };
  try {
    const first = await serve(env);
    await first.stop();
    const printed = [...first.output().matchAll(/\bgpk_[A-Za-z0-9_-]{40,}/g)].map((m) => m[0]);
    assert.equal(printed.length, 1, 'the key is printed exactly once');
    const key = printed[0];

    const second = await serve(env);
    try {
      const me = await call(second.url, 'GET', '/api/v0/users/current', key);
      assert.equal(me.status, 200);
      assert.equal(me.body.is_admin, true);
      assert.notEqual(me.body.email_verified_at, null);
      assert.equal(me.body.api_key, key);
    } finally {
      await second.stop();
    }
    assert.doesNotMatch(second.output(), /gpk_/, 'not printed again once the owner exists');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
