// Several processes on one PostgreSQL database share one secret key (issue 11 §9): a TOTP method set up through one
// process is readable through another. Without GPUPLANE_SECRET_KEY, emulator mode keeps one generated key in the
// database (each process warns); each process here runs in a folder of its own, as on separate machines, so a key
// kept in a local file could not be shared.
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { T0 } from './helpers/harness.js';
import { call, freshPgDatabase, serve, type Served } from './helpers/spawn.js';
import { totpCode } from '../src/tfa/totp.js';
import { openDatabase } from '../src/database.js';
import { resolveSecretKey, SECRET_KEY_KV } from '../src/platform/secret-key.js';
import { cryptoRandom } from '../src/platform/random.js';

const KEY = 'gpk_secret_key_owner_0123456789';

// Without GPUPLANE_TEST_POSTGRES_URL, freshPgDatabase() throws: each test fails naming it.
describe('one secret key for every process on a PostgreSQL database', () => {
  const dirs: string[] = [];
  after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  test('two stores opening the database at once resolve the same generated key', async () => {
    const db = await freshPgDatabase();
    const stores = await Promise.all([openDatabase(db.url), openDatabase(db.url)]);
    try {
      const keys = await Promise.all(stores.map((s) => resolveSecretKey(undefined, db.url, s, cryptoRandom)));
      assert.equal(keys[0].key, keys[1].key);
      assert.match(keys[0].key, /^[0-9a-f]{64}$/);
      assert.deepEqual(keys.map((k) => k.generatedIn), ['database', 'database']);
      // A given key is used as it is, and nothing is generated.
      assert.deepEqual(await resolveSecretKey('given-key-0123456789', db.url, stores[0], cryptoRandom), { key: 'given-key-0123456789' });
    } finally {
      await Promise.all(stores.map((s) => s.close()));
      await db.drop();
    }
  });

  test('TOTP set up through one process verifies through the other; both warn about the stored key', async () => {
    const db = await freshPgDatabase();
    const env = { GPUPLANE_DATABASE_URL: db.url, GPUPLANE_BOOTSTRAP_API_KEY: KEY, GPUPLANE_CLOCK: 'virtual', GPUPLANE_CLOCK_START: String(T0), GPUPLANE_SIM_MACHINES: '3' };
    const servers: Served[] = [];
    try {
      for (let i = 0; i < 2; i++) {
        const cwd = mkdtempSync(join(tmpdir(), 'gpuplane-secret-'));
        dirs.push(cwd);
        servers.push(await serve(env, { cwd }));
      }
      const [a, b] = servers;
      for (const s of servers) assert.match(s.output(), /"level":40[^\n]*GPUPLANE_SECRET_KEY is not set/);

      const made = await call(a.url, 'POST', '/_emu/users', KEY, { email: 'totp-shared@example.com' });
      const key = made.body.api_key;
      const start = await call(a.url, 'POST', '/api/v0/tfa/authorize-new-method/', key, { tfa_method: 'email' });
      const outbox = await call(a.url, 'GET', '/_emu/outbox?to=totp-shared@example.com&channel=email', KEY);
      const emailCode = outbox.body.messages.at(-1).code;
      assert.equal((await call(a.url, 'PUT', '/api/v0/tfa/authorize-new-method/', key, { code: emailCode, secret: start.body.secret })).status, 200);

      // Set up through B: B encrypts the TOTP secret with its key.
      const setup = await call(b.url, 'POST', '/api/v0/tfa/totp-setup/', key);
      const now = (await call(b.url, 'GET', '/_emu/clock', KEY)).body.now;
      const confirmed = await call(b.url, 'POST', '/api/v0/tfa/confirm-new/', key, { tfa_method: 'totp', code: totpCode(setup.body.secret, now), secret: setup.body.secret });
      assert.equal(confirmed.status, 200, JSON.stringify(confirmed.body));

      // Verified through A (A decrypts it), with the next period's code: a code is used once.
      const later = (await call(a.url, 'POST', '/_emu/clock/advance', KEY, { seconds: 30 })).body.now;
      const again = await call(a.url, 'POST', '/api/v0/tfa/authorize-new-method/', key, { tfa_method: 'totp' });
      assert.equal(again.status, 200, JSON.stringify(again.body));
      const verified = await call(a.url, 'PUT', '/api/v0/tfa/authorize-new-method/', key, { code: totpCode(setup.body.secret, later), secret: again.body.secret });
      assert.equal(verified.status, 200, JSON.stringify(verified.body));
    } finally {
      await Promise.all(servers.map((s) => s.stop()));
      await db.drop();
    }
  });
  test('/_emu/reset keeps the generated key: a process started after the reset reads what was encrypted before it', async () => {
    const db = await freshPgDatabase();
    const env = { GPUPLANE_DATABASE_URL: db.url, GPUPLANE_BOOTSTRAP_API_KEY: KEY, GPUPLANE_CLOCK: 'virtual', GPUPLANE_CLOCK_START: String(T0), GPUPLANE_SIM_MACHINES: '3' };
    const servers: Served[] = [];
    const keyRow = async () => {
      const store = await openDatabase(db.url);
      try {
        return (await store.db.selectFrom('kv').select('value').where('key', '=', SECRET_KEY_KV).executeTakeFirst())?.value;
      } finally {
        await store.close();
      }
    };
    try {
      const cwd = mkdtempSync(join(tmpdir(), 'gpuplane-secret-'));
      dirs.push(cwd);
      const a = await serve(env, { cwd });
      servers.push(a);
      const before = await keyRow();
      assert.match(before ?? '', /^[0-9a-f]{64}$/);
      assert.equal((await call(a.url, 'POST', '/_emu/reset', KEY)).status, 200);
      assert.equal(await keyRow(), before);

      // After the reset, A encrypts a TOTP secret; B, started later, must decrypt it.
      const made = await call(a.url, 'POST', '/_emu/users', KEY, { email: 'after-reset@example.com' });
      const key = made.body.api_key;
      const start = await call(a.url, 'POST', '/api/v0/tfa/authorize-new-method/', key, { tfa_method: 'email' });
      const outbox = await call(a.url, 'GET', '/_emu/outbox?to=after-reset@example.com&channel=email', KEY);
      assert.equal((await call(a.url, 'PUT', '/api/v0/tfa/authorize-new-method/', key, { code: outbox.body.messages.at(-1).code, secret: start.body.secret })).status, 200);
      const setup = await call(a.url, 'POST', '/api/v0/tfa/totp-setup/', key);
      const now = (await call(a.url, 'GET', '/_emu/clock', KEY)).body.now;
      assert.equal((await call(a.url, 'POST', '/api/v0/tfa/confirm-new/', key, { tfa_method: 'totp', code: totpCode(setup.body.secret, now), secret: setup.body.secret })).status, 200);

      const cwdB = mkdtempSync(join(tmpdir(), 'gpuplane-secret-'));
      dirs.push(cwdB);
      const b = await serve(env, { cwd: cwdB });
      servers.push(b);
      const later = (await call(b.url, 'POST', '/_emu/clock/advance', KEY, { seconds: 30 })).body.now;
      const again = await call(b.url, 'POST', '/api/v0/tfa/authorize-new-method/', key, { tfa_method: 'totp' });
      const verified = await call(b.url, 'PUT', '/api/v0/tfa/authorize-new-method/', key, { code: totpCode(setup.body.secret, later), secret: again.body.secret });
      assert.equal(verified.status, 200, JSON.stringify(verified.body));
    } finally {
      await Promise.all(servers.map((s) => s.stop()));
      await db.drop();
    }
  });
});
