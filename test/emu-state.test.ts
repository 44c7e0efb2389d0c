// Issue 34 (state): the whole emulated world saved (GET /_emu/state) and loaded into a fresh emulator
// (PUT /_emu/state), on each database and across them: the same ids, the same keys, the same answers, the same clock,
// and the world goes on the same way after (billing, the next ids).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestApp, DIALECTS, OWNER_KEY, T0, type TestApp } from './helpers/harness.js';
import type { DialectName } from '../src/platform/db/connect.js';
import { emuStateFor } from '../src/emulator/emu-state/emu-state-wiring.js';

const SSH_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEw6kqUqCcIAqqvG2F1vJPrkmYx8bLBIl6RCsvx7mW0N state@test';
/** A fresh emulator differs from the saved one: another secret key (sealed values are sealed again), a later clock. */
const FRESH = { GPUPLANE_SECRET_KEY: 'another-secret-key-for-the-fresh-one', GPUPLANE_CLOCK_START: String(T0 + 40 * 86400) };

interface World {
  renterKey: string;
  secondKey: string;
  userId: number;
  instanceId: number;
  machineId: number;
}

function ok<T = any>(r: { status: number; body: T; raw: string }, what: string): T {
  assert.equal(r.status, 200, `${what}: ${r.raw}`);
  return r.body;
}

/** Users, keys, a template with a registry password (sealed), an SSH key, a machine added, an instance running a while. */
async function buildWorld(t: TestApp): Promise<World> {
  const u = await t.createUser({ email: 'state-renter@example.com', credit: 50 });
  await t.createUser({ email: 'state-other@example.com', credit: 7 });
  const second = ok(await t.request('POST', '/api/v0/auth/apikeys/', { key: u.api_key, body: { name: 'second' } }), 'key');
  ok(await t.request('POST', '/api/v0/template/', { key: u.api_key, body: { name: 'tpl', image: 'ubuntu', docker_login_repo: 'docker.io', docker_login_user: 'me', docker_login_pass: 'registry-pass' } }), 'template');
  ok(await t.request('POST', '/api/v0/ssh/', { key: u.api_key, body: { ssh_key: SSH_KEY } }), 'ssh key');
  const machine = ok(await t.request('POST', '/_emu/machines', { body: { gpu_name: 'RTX 4090', num_gpus: 2, price_gpu: 0.5 } }), 'machine');
  const rented = ok(await t.request('PUT', `/api/v0/asks/${machine.offer_ids[0]}/`, { key: u.api_key, body: { image: 'busybox', disk: 10, runtype: 'jupyter' } }), 'rent');
  await t.advance(120);
  await t.advance(3600);
  return { renterKey: u.api_key, secondKey: second.key, userId: u.user.id, instanceId: rented.new_contract, machineId: machine.machine_id };
}

/** What a client sees of the world: the answers that must be the same after a load. */
async function answers(t: TestApp, w: World) {
  const get = async (url: string, key: string, query?: Record<string, string>) => ok(await t.request('GET', url, { key, query }), url);
  return {
    clock: await get('/_emu/clock', OWNER_KEY),
    user: await get('/api/v0/users/current/', w.renterKey),
    userBySecondKey: await get('/api/v0/users/current/', w.secondKey),
    keys: await get('/api/v0/auth/apikeys/', w.renterKey),
    instances: await get('/api/v0/instances/', w.renterKey),
    instance: await get(`/api/v0/instances/${w.instanceId}/`, w.renterKey),
    invoices: await get('/api/v0/users/me/invoices', w.renterKey, { owner: 'me', sdate: '0', edate: String(t.clock.now() + 1), inc_charges: 'true' }),
    templates: await get('/api/v0/template/', w.renterKey),
    ssh: await get('/api/v0/ssh/', w.renterKey),
    offers: ok(await t.request('POST', '/api/v0/bundles/', { body: { rentable: { eq: true }, order: [['id', 'asc']], limit: 1000 } }), 'search'),
    machine: ok(await t.request('POST', '/api/v0/bundles/', { body: { machine_id: { eq: w.machineId } } }), 'machine offers'),
  };
}

/** The document's rows but for the cache token a load replaces (the fleet's epoch). */
function worldRows(doc: any) {
  const rows = structuredClone(doc.rows);
  for (const r of rows.fleet_state ?? []) delete r.epoch;
  return rows;
}

async function saveAndLoad(from: DialectName, to: DialectName) {
  describe(`emulator state: saved on ${from}, loaded into a fresh emulator on ${to}`, () => {
    let a: TestApp;
    let b: TestApp;
    let w: World;
    let doc: any;
    before(async () => {
      a = await createTestApp(from);
      b = await createTestApp(to, { config: FRESH });
      w = await buildWorld(a);
      doc = ok(await a.request('GET', '/_emu/state'), 'save');
    });
    after(async () => {
      await a?.close();
      await b?.close();
    });

    test('the document: format, version, the clock, every table, no secret key, sealed values opened', () => {
      assert.equal(doc.format, 'gpuplane-emulator-state');
      assert.equal(doc.version, 1);
      assert.equal(doc.saved_from, from);
      assert.deepEqual(doc.clock, { kind: 'virtual', now: T0 + 3720 });
      assert.equal(doc.saved_at, T0 + 3720);
      for (const table of ['users', 'api_keys', 'fleet_machines', 'fleet_gpus', 'instances', 'templates', 'ssh_keys', 'jobs', 'kv']) {
        assert.ok(Array.isArray(doc.rows[table]) && doc.rows[table].length > 0, `rows of ${table}`);
      }
      assert.ok(!Object.keys(doc.rows).some((t) => t.startsWith('kysely_')), 'no migration bookkeeping');
      assert.ok(!doc.rows.kv.some((r: any) => r.key === 'secret_key'), 'the secret key stays with its database');
      const text = JSON.stringify(doc);
      assert.ok(text.includes('{"$sealed":"registry-pass"}'), 'the template password travels opened');
      assert.ok(!/"v1\.[A-Za-z0-9_-]{16}\./.test(text), 'no value sealed with the saving server\'s key');
      assert.ok(doc.sequences.users >= 3 && doc.sequences.instances >= 1, JSON.stringify(doc.sequences));
    });

    test('loaded into a fresh emulator: the same answers, ids, keys and clock', async () => {
      const before = await answers(a, w);
      const loaded = ok(await b.request('PUT', '/_emu/state', { body: doc }), 'load');
      assert.equal(loaded.success, true);
      assert.equal(loaded.rows, Object.values(doc.rows).reduce((n: number, r: any) => n + r.length, 0));
      assert.deepEqual(loaded.clock, { kind: 'virtual', now: T0 + 3720 });
      assert.equal(b.clock.now(), T0 + 3720, 'the clock went back to the saved world\'s');
      const got = await answers(b, w);
      assert.deepEqual(got, before);
      assert.equal(got.instances.instances[0].actual_status, 'running');
      assert.ok(got.offers.offers.length > 0);
      // Saved again from each (both served the same calls since, at the same time): the same rows.
      const fromA = ok(await a.request('GET', '/_emu/state'), 'save again from a');
      const fromB = ok(await b.request('GET', '/_emu/state'), 'save again from b');
      assert.deepEqual(worldRows(fromB), worldRows(fromA));
      assert.deepEqual(fromB.sequences, fromA.sequences);
    });

    test('after the load the world goes on the same way: billing, the next ids, a new rental', async () => {
      for (const t of [a, b]) await t.advance(1800);
      assert.deepEqual(await answers(b, w), await answers(a, w));
      const made = [];
      for (const t of [a, b]) {
        const key = ok(await t.request('POST', '/api/v0/auth/apikeys/', { key: w.renterKey, body: { name: 'after' } }), 'key after');
        const user = await t.createUser({ email: 'state-after@example.com' });
        const offer = ok(await t.request('POST', '/api/v0/bundles/', { body: { rentable: { eq: true }, num_gpus: { eq: 1 }, order: [['id', 'asc']], limit: 1 } }), 'offer').offers[0];
        const rent = ok(await t.request('PUT', `/api/v0/asks/${offer.id}/`, { key: w.renterKey, body: { image: 'busybox', disk: 5 } }), 'rent after');
        made.push({ key: key.id, user: user.user.id, offer: offer.id, instance: rent.new_contract });
      }
      assert.deepEqual(made[1], made[0]);
      for (const t of [a, b]) await t.advance(600);
      assert.deepEqual(await answers(b, w), await answers(a, w));
    });
  });
}

for (const d of DIALECTS) await saveAndLoad(d, d);
if (DIALECTS.includes('postgres')) {
  await saveAndLoad('sqlite', 'postgres');
  await saveAndLoad('postgres', 'sqlite');
}

for (const dialect of DIALECTS) {
  describe(`emulator state: refusals [${dialect}]`, () => {
    let t: TestApp;
    let doc: any;
    let userKey: string;
    before(async () => {
      t = await createTestApp(dialect);
      userKey = (await t.createUser({ email: 'state-refusals@example.com' })).api_key;
      doc = ok(await t.request('GET', '/_emu/state'), 'save');
    });
    after(async () => t?.close());

    const refused = async (body: unknown, status: number, msg: RegExp) => {
      const r = await t.request('PUT', '/_emu/state', { body });
      assert.equal(r.status, status, r.raw);
      assert.equal(r.body.success, false);
      assert.match(r.body.msg, msg);
      // Nothing was written: the user made before is still there.
      assert.equal((await t.request('GET', '/api/v0/users/current/', { key: userKey })).status, 200);
    };

    test('a wrong format or version: 400 naming it', async () => {
      await refused({ ...doc, format: 'something-else' }, 400, /^body\.format: /);
      await refused({ ...doc, version: 2 }, 400, /^body\.version: 2 /);
      await refused({ format: 'gpuplane-emulator-state', version: 1 }, 400, /rows/);
      await refused('not json at all', 400, /JSON|body/);
    });

    test('an unknown table or column, a value of the wrong type, a missing required column: 400 naming it', async () => {
      await refused({ ...doc, rows: { ...doc.rows, no_such_table: [] } }, 400, /^body\.rows\.no_such_table: /);
      const users = doc.rows.users.map((r: any) => ({ ...r }));
      await refused({ ...doc, rows: { ...doc.rows, users: [{ ...users[0], bogus: 1 }, ...users.slice(1)] } }, 400, /^body\.rows\.users\[0\]\.bogus: /);
      await refused({ ...doc, rows: { ...doc.rows, users: [{ ...users[0], credit_micro: 'lots' }, ...users.slice(1)] } }, 400, /^body\.rows\.users\[0\]\.credit_micro: must be an integer/);
      await refused({ ...doc, rows: { ...doc.rows, users: [{ ...users[0], email: null }, ...users.slice(1)] } }, 400, /^body\.rows\.users\[0\]\.email: must not be null/);
      await refused({ ...doc, rows: { ...doc.rows, users: [{ ...users[0], email: { nested: 1 } }, ...users.slice(1)] } }, 400, /^body\.rows\.users\[0\]\.email: an object/);
    });

    test('rows the database refuses (a duplicate id) roll the whole load back: 400, the world unchanged', async () => {
      await refused({ ...doc, rows: { ...doc.rows, users: [...doc.rows.users, doc.rows.users[0]] } }, 400, /^body\.rows\.users: the database refused/);
    });

    test('a world without the caller\'s key (revoked, or none) is refused: 409, the caller would be locked out', async () => {
      const keys = doc.rows.api_keys.map((k: any) => (k.is_bootstrap === 1 ? { ...k, revoked_at: k.created_at } : k));
      await refused({ ...doc, rows: { ...doc.rows, api_keys: keys } }, 409, /no live key equal to the one this request came with/);
      const { api_keys: _gone, ...noKeys } = doc.rows;
      await refused({ ...doc, rows: noKeys }, 409, /GPUPLANE_BOOTSTRAP_API_KEY/);
    });

    test('only an admin key may save or load', async () => {
      assert.equal((await t.request('GET', '/_emu/state', { key: userKey })).status, 403);
      assert.equal((await t.request('PUT', '/_emu/state', { key: userKey, body: doc })).status, 403);
      assert.equal((await t.request('GET', '/_emu/state', { key: null })).status, 401);
    });

    test('parts that keep something in memory hear of each load, after it committed; not of a refused one', async () => {
      let heard = 0;
      emuStateFor(t.services.deps).onLoaded(() => void heard++);
      assert.equal((await t.request('PUT', '/_emu/state', { body: { ...doc, version: 3 } })).status, 400);
      assert.equal(heard, 0);
      assert.equal((await t.request('PUT', '/_emu/state', { body: doc })).status, 200);
      assert.equal(heard, 1);
    });

    test('a document above the API\'s usual 1 MiB is taken', async () => {
      const padded = { ...doc, padding: 'x'.repeat(3 * 1024 * 1024) };
      const r = await t.request('PUT', '/_emu/state', { body: padded });
      assert.equal(r.status, 200, r.raw.slice(0, 300));
    });
  });
}

describe('emulator state: GPUPLANE_EMU_STATE loads a saved world before the server listens', () => {
  let dir: string;
  let a: TestApp | undefined;
  let b: TestApp | undefined;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'emu-state-'));
  });
  after(async () => {
    await a?.close();
    await b?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the lifecycle hook loads the file; a bad file stops the start naming the file', async () => {
    a = await createTestApp('sqlite');
    const w = await buildWorld(a);
    const file = join(dir, 'world.json');
    writeFileSync(file, JSON.stringify(ok(await a.request('GET', '/_emu/state'), 'save')));
    b = await createTestApp(DIALECTS.at(-1)!, { config: { ...FRESH, GPUPLANE_EMU_STATE: file } });
    await b.services.emuLifecycle.beforeListen();
    assert.deepEqual(await answers(b, w), await answers(a, w));

    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ format: 'gpuplane-emulator-state', version: 9, rows: {} }));
    const c = await createTestApp('sqlite', { config: { GPUPLANE_EMU_STATE: bad } });
    try {
      await assert.rejects(c.services.emuLifecycle.beforeListen(), (err: Error) => err.message.includes(bad) && /body\.version: 9/.test(err.message));
    } finally {
      await c.close();
    }
  });
});
