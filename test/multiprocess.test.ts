// Many processes, one database (issue 2 §4): two real gpuplane processes on one PostgreSQL database serve the same
// data — what one writes the other serves, at once; nothing that matters lives in one process's memory.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { T0 } from './helpers/harness.js';
import { call, freshPgDatabase, serve, type Served } from './helpers/spawn.js';

const KEY = 'gpk_multiprocess_owner_key_0123456789';

// Without GPUPLANE_TEST_POSTGRES_URL, freshPgDatabase() throws in `before`, failing every test here with its name.
describe('two processes on one PostgreSQL database', () => {
  let a: Served;
  let b: Served;
  let db: Awaited<ReturnType<typeof freshPgDatabase>>;

  before(async () => {
    db = await freshPgDatabase();
    const env = {
      GPUPLANE_DATABASE_URL: db.url,
      GPUPLANE_BOOTSTRAP_API_KEY: KEY,
      GPUPLANE_CLOCK: 'virtual',
      GPUPLANE_CLOCK_START: String(T0),
      GPUPLANE_SIM_MACHINES: '5',
      GPUPLANE_SECRET_KEY: 'multiprocess-secret-key-0123',
    };
    // Started together on an empty database: both migrate and both try to create the owner.
    const started = await Promise.allSettled([serve(env), serve(env)]);
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) {
      // Stop the one that did start, or its process keeps this test file alive.
      await Promise.all(started.map((s) => (s.status === 'fulfilled' ? s.value.stop() : undefined)));
      throw failed.reason;
    }
    [a, b] = started.map((s) => (s as PromiseFulfilledResult<Served>).value);
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await db?.drop();
  });

  test('both serve the one owner account created on the empty database', async () => {
    const fromA = await call(a.url, 'GET', '/api/v0/users/current', KEY);
    const fromB = await call(b.url, 'GET', '/api/v0/users/current', KEY);
    assert.equal(fromA.status, 200, JSON.stringify(fromA.body));
    assert.equal(fromB.status, 200, JSON.stringify(fromB.body));
    assert.equal(fromA.body.id, fromB.body.id);
    assert.equal(fromA.body.is_admin, true);
    assert.notEqual(a.url, b.url);
  });

  test('a user created in one process is served by the other, and its e-mail is taken in both', async () => {
    const made = await call(a.url, 'POST', '/_emu/users', KEY, { email: 'shared@example.com', full_name: 'Shared', credit: 42 });
    assert.equal(made.status, 200, JSON.stringify(made.body));
    const me = await call(b.url, 'GET', '/api/v0/users/current', made.body.api_key);
    assert.equal(me.status, 200);
    assert.equal(me.body.id, made.body.user.id);
    assert.equal(me.body.email, 'shared@example.com');
    assert.equal(me.body.credit, 42);
    const again = await call(b.url, 'POST', '/_emu/users', KEY, { email: 'shared@example.com' });
    assert.equal(again.status, 409);
  });

  test('an API key deleted through one process is refused by the other at once (401)', async () => {
    const made = await call(a.url, 'POST', '/api/v0/auth/apikeys/', KEY, { name: 'short-lived' });
    assert.equal(made.status, 200, JSON.stringify(made.body));
    const secret: string = made.body.key;
    assert.equal((await call(b.url, 'GET', '/api/v0/users/current', secret)).status, 200);
    const deleted = await call(a.url, 'DELETE', `/api/v0/auth/apikeys/${made.body.id}/`, KEY, {});
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    const refused = await call(b.url, 'GET', '/api/v0/users/current', secret);
    assert.equal(refused.status, 401);
    assert.equal(refused.body.error, 'auth_error');
  });

  test('the virtual clock advanced in one process is the time in the other', async () => {
    const advanced = await call(a.url, 'POST', '/_emu/clock/advance', KEY, { seconds: 120 });
    assert.equal(advanced.status, 200);
    assert.equal(advanced.body.now, T0 + 120);
    assert.deepEqual((await call(b.url, 'GET', '/_emu/clock', KEY)).body, { now: T0 + 120 });
    await call(b.url, 'POST', '/_emu/clock/advance', KEY, { seconds: 30 });
    assert.deepEqual((await call(a.url, 'GET', '/_emu/clock', KEY)).body, { now: T0 + 150 });
  });

  test('a reset in one process is seen at once in the other: the user\'s key stops working there', async () => {
    const made = await call(b.url, 'POST', '/_emu/users', KEY, { email: 'short-lived@example.com' });
    assert.equal((await call(a.url, 'GET', '/api/v0/users/current', made.body.api_key)).status, 200);
    assert.equal((await call(b.url, 'POST', '/_emu/reset', KEY, {})).status, 200);
    assert.equal((await call(a.url, 'GET', '/api/v0/users/current', made.body.api_key)).status, 401);
    assert.equal((await call(a.url, 'GET', '/api/v0/users/current', KEY)).status, 200, 'the bootstrap key survives');
  });

  test('both serve the same GPU model names', async () => {
    const fromA = await call(a.url, 'GET', '/api/v0/gpu_names/unique/', null);
    const fromB = await call(b.url, 'GET', '/api/v0/gpu_names/unique/', null);
    assert.equal(fromA.status, 200);
    assert.deepEqual(fromA.body, fromB.body);
  });
});
