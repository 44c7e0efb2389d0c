// Issue 34 item 2: the declarative seed (POST /_emu/seed, the seed file at start) and the init scripts; item 6's
// readiness: /readyz 503 until they are done.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestApp, DIALECTS, forEachDialect, type TestApp } from './helpers/harness.js';

const ALICE_KEY = 'alice-test-key-0123456789';
const BOB_KEY = 'bob-readonly-key-0123456789';

function pubKey(seed: string): string {
  const str = (b: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, b.length]), b]);
  const blob = Buffer.concat([str(Buffer.from('ssh-ed25519')), str(createHash('sha256').update(seed).digest())]);
  return `ssh-ed25519 ${blob.toString('base64')} ${seed}@example`;
}

function seedDoc() {
  return {
    fleet: 'none',
    machines: [
      { gpu_name: 'H100 SXM', num_gpus: 8, price_gpu: 2.5, geolocation: 'Iceland, IS', reliability: 0.995, count: 2 },
      { gpu_name: 'RTX 3090', num_gpus: 1, price_gpu: 0.2, owner: 'bob@seed.example' },
    ],
    users: [
      {
        email: 'alice@seed.example',
        password: 'alice-password-1',
        credit: 250,
        api_keys: [{ key: ALICE_KEY, name: 'ci' }],
        templates: [{ name: 'seeded-pytorch', image: 'pytorch/pytorch', tag: 'latest', onstart: 'echo hi' }],
        ssh_keys: [pubKey('alice')],
        env_vars: { HF_TOKEN: 'hf_seeded' },
      },
      {
        email: 'bob@seed.example',
        api_keys: [{ key: BOB_KEY, permissions: { api: { misc: {} } } }],
      },
    ],
  };
}

async function search(app: TestApp, key: string): Promise<any[]> {
  const res = await app.request('POST', '/api/v0/bundles/', { key, body: { limit: 1000 } });
  assert.equal(res.status, 200, res.raw);
  return res.body.offers;
}

forEachDialect('POST /_emu/seed', (app) => {
  test('users get the keys they chose, credit, templates, SSH keys and variables; the fleet is exactly the seed\'s', async () => {
    const res = await app().request('POST', '/_emu/seed', { body: seedDoc() });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.success, true);
    assert.deepEqual(res.body.users.map((u: any) => [u.email, u.created, u.api_keys_added]), [
      ['alice@seed.example', true, 1],
      ['bob@seed.example', true, 1],
    ]);
    assert.equal(res.body.machines.length, 3);
    assert.equal(res.body.removed_machines, 20, "the harness's 20 machines");
    assert.deepEqual([res.body.templates_added, res.body.ssh_keys_added, res.body.env_vars_added], [1, 1, 1]);

    // The chosen key authenticates Alice, with her credit.
    const me = await app().request('GET', '/api/v0/users/current/', { key: ALICE_KEY });
    assert.equal(me.status, 200, me.raw);
    assert.equal(me.body.email, 'alice@seed.example');
    assert.equal(me.body.credit, 250);

    // Offers: only the seed's machines, with their GPUs, prices, place and reliability.
    const offers = await search(app(), ALICE_KEY);
    const machines = new Set(offers.map((o) => o.machine_id));
    assert.deepEqual([...machines].sort((a, b) => a - b), res.body.machines.map((m: any) => m.machine_id).sort((a: number, b: number) => a - b));
    const h100 = offers.filter((o) => o.gpu_name === 'H100 SXM' && o.num_gpus === 8);
    assert.equal(h100.length, 2);
    for (const o of h100) {
      assert.equal(o.geolocation, 'Iceland, IS');
      assert.equal(o.reliability, 0.995);
      assert.ok(Math.abs(o.dph_base - 20) < 1e-9, `8 GPUs at $2.5: ${o.dph_base}`);
    }
    // Bob hosts the 3090.
    const bobMachine = res.body.machines[2].machine_id;
    assert.ok(offers.some((o) => o.machine_id === bobMachine && o.gpu_name === 'RTX 3090'));

    const templates = await app().request('GET', '/api/v0/users/me/templates/', { key: ALICE_KEY });
    assert.equal(templates.status, 200, templates.raw);
    assert.deepEqual(templates.body.templates.map((t: any) => [t.name, t.image, t.onstart]), [['seeded-pytorch', 'pytorch/pytorch', 'echo hi']]);
    const ssh = await app().request('GET', '/api/v0/ssh/', { key: ALICE_KEY });
    assert.equal(ssh.status, 200, ssh.raw);
    assert.equal(JSON.stringify(ssh.body).includes(pubKey('alice').split(' ')[1]), true, ssh.raw);
    const env = await app().request('GET', '/api/v0/secrets/', { key: ALICE_KEY });
    assert.deepEqual(env.body.secrets, { HF_TOKEN: 'hf_seeded' });

    // Bob's key has the permissions the seed gave it: misc only, so no instance list; Alice's has them all.
    const bobList = await app().request('GET', '/api/v0/instances/', { key: BOB_KEY });
    assert.equal(bobList.status, 403, bobList.raw);
    assert.equal((await app().request('GET', '/api/v0/instances/', { key: ALICE_KEY })).status, 200);
  });

  test('applying the same seed again: users, keys, templates, SSH keys, variables stay single; fleet "none" offers the new machines only', async () => {
    const res = await app().request('POST', '/_emu/seed', { body: seedDoc() });
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body.users.map((u: any) => [u.created, u.api_keys_added]), [[false, 0], [false, 0]]);
    assert.deepEqual([res.body.templates_added, res.body.ssh_keys_added, res.body.env_vars_added], [0, 0, 0]);
    assert.equal(res.body.machines.length, 3);
    assert.equal(res.body.removed_machines, 3);
    const templates = await app().request('GET', '/api/v0/users/me/templates/', { key: ALICE_KEY });
    assert.equal(templates.body.templates.length, 1);
    const offers = await search(app(), ALICE_KEY);
    assert.deepEqual([...new Set(offers.map((o) => o.machine_id))].sort((a, b) => a - b), res.body.machines.map((m: any) => m.machine_id));
    // Without fleet "none" the machines are added to what is there.
    const more = await app().request('POST', '/_emu/seed', { body: { machines: [{ gpu_name: 'H100 SXM', num_gpus: 8, count: 1 }] } });
    assert.equal(more.status, 200, more.raw);
    assert.equal(more.body.removed_machines, 0);
    assert.equal((await search(app(), ALICE_KEY)).filter((o) => o.gpu_name === 'H100 SXM' && o.num_gpus === 8).length, 3);
  });

  test('bad seeds: 400 naming the path of the field, and nothing applied', async () => {
    const cases: [unknown, RegExp][] = [
      [{ users: [{ email: 'ok@seed.example' }, { email: 'c@seed.example', api_keys: [{ key: 'short' }] }] }, /^users\[1\]\.api_keys\[0\]\.key: must be 16 to 512/],
      [{ users: [{ email: 'not-an-email' }] }, /^users\[0\]\.email: /],
      [{ users: [{ email: 'd@seed.example', credit: -1 }] }, /^users\[0\]\.credit: /],
      [{ users: [{ email: 'd@seed.example', templates: [{ image: 'x' }] }] }, /^users\[0\]\.templates\[0\]\.name: required/],
      [{ users: [{ email: 'd@seed.example', api_keys: [{ key: 'x'.repeat(20), permissions: { nope: {} } }] }] }, /^users\[0\]\.api_keys\[0\]\.permissions: /],
      [{ machines: [{ gpu_nam: 'RTX 4090' }] }, /^machines\[0\]\.gpu_nam: unknown field$/],
      [{ machines: [{ num_gpus: 0 }] }, /^machines\[0\]\.num_gpus: /],
      [{ machines: [{ count: 0 }] }, /^machines\[0\]\.count: /],
      [{ machines: [{ owner: 'nobody@seed.example' }] }, /^machines\[0\]\.owner: nobody@seed\.example is not one of the seed's users/],
      [{ fleet: 'some' }, /^fleet: /],
      [{ userz: [] }, /^userz: unknown field/],
      [{ users: [{ email: 'e@seed.example', api_keys: [{ key: 'dup-key-0123456789' }] }, { email: 'f@seed.example', api_keys: [{ key: 'dup-key-0123456789' }] }] }, /^users\[1\]\.api_keys\[0\]\.key: the same key appears twice/],
    ];
    for (const [body, msg] of cases) {
      const res = await app().request('POST', '/_emu/seed', { body });
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.raw}`);
      assert.equal(res.body.success, false);
      assert.equal(res.body.error, 'bad_request');
      assert.match(res.body.msg, msg);
    }
    // The first, valid user of the first case was not made: the whole document is checked first.
    const users = await app().request('POST', '/_emu/seed', { body: { users: [{ email: 'ok@seed.example' }] } });
    assert.equal(users.body.users[0].created, true);
  });

  test("a key that is another user's: 409 naming the field; the secret is never echoed", async () => {
    const res = await app().request('POST', '/_emu/seed', { body: { users: [{ email: 'mallory@seed.example', api_keys: [{ key: ALICE_KEY }] }] } });
    assert.equal(res.status, 409, res.raw);
    assert.match(res.body.msg, /^users\[0\]\.api_keys\[0\]\.key: already the key of another user/);
    assert.ok(!res.raw.includes(ALICE_KEY));
  });

  test('a non-admin key cannot seed (403)', async () => {
    const res = await app().request('POST', '/_emu/seed', { key: ALICE_KEY, body: { users: [] } });
    assert.equal(res.status, 403, res.raw);
  });
});

/** The app's lifecycle as main.ts runs it: before listening, listening on a free loopback port, after listening. */
async function startLifecycle(t: TestApp): Promise<string> {
  await t.services.emuLifecycle.beforeListen();
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  const address = t.app.server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  await t.services.emuLifecycle.afterListen({ url });
  return url;
}

for (const dialect of DIALECTS) {
  test(`[${dialect}] the seed file at start, then init scripts in name order with the URL and the key; /readyz 503 until they are done`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'emu-seed-'));
    const initDir = join(dir, 'init.d');
    const seedFile = join(dir, 'seed.json');
    const gate = join(dir, 'gate');
    const trace = join(dir, 'trace');
    writeFileSync(seedFile, JSON.stringify({ fleet: 'none', users: [{ email: 'ci@seed.example', api_keys: [{ key: ALICE_KEY }] }], machines: [{ gpu_name: 'A100 PCIE', count: 3 }] }));
    mkdirSync(initDir);
    // 10-: waits for the test's gate, so readiness can be seen held; 20-: makes a user through the API with the
    // owner's key; 30-: fails; notes.txt: not executable, skipped.
    writeFileSync(join(initDir, '10-wait.sh'), `#!/bin/sh\necho "10 $GPUPLANE_URL $VAST_URL" >> ${trace}\nwhile [ ! -e ${gate} ]; do sleep 0.05; done\n`);
    writeFileSync(join(initDir, '20-user.sh'), `#!/bin/sh\nset -e\necho 20 >> ${trace}\ncurl -sf -X POST -H "Authorization: Bearer $GPUPLANE_API_KEY" -H 'Content-Type: application/json' -d '{"email":"from-init@seed.example"}' "$GPUPLANE_URL/_emu/users" > /dev/null\n`);
    writeFileSync(join(initDir, '30-fail.sh'), `#!/bin/sh\necho 30 >> ${trace}\nexit 3\n`);
    writeFileSync(join(initDir, 'notes.txt'), 'not a script\n');
    for (const f of ['10-wait.sh', '20-user.sh', '30-fail.sh']) chmodSync(join(initDir, f), 0o755);
    const t = await createTestApp(dialect, { config: { GPUPLANE_EMU_SEED_FILE: seedFile, GPUPLANE_EMU_INIT_DIR: initDir } });
    try {
      const notYet = await t.request('GET', '/readyz', { key: null });
      assert.equal(notYet.status, 503, notYet.raw);
      assert.equal(notYet.body.error, 'service_unavailable');
      const url = await startLifecycle(t);
      // Seeded before listening.
      const me = await t.request('GET', '/api/v0/users/current/', { key: ALICE_KEY });
      assert.equal(me.body.email, 'ci@seed.example');
      const offers = await search(t, ALICE_KEY);
      assert.deepEqual([...new Set(offers.map((o) => o.gpu_name))], ['A100 PCIE']);
      assert.equal(new Set(offers.map((o) => o.machine_id)).size, 3);
      // The first script holds readiness.
      const deadline = Date.now() + 10_000;
      while (!readFileSafe(trace).includes('10 ') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      assert.equal(readFileSafe(trace).trim(), `10 ${url} ${url}`);
      const held = await t.request('GET', '/readyz', { key: null });
      assert.equal(held.status, 503, held.raw);
      assert.match(held.body.msg, /init scripts/);
      writeFileSync(gate, '');
      await t.services.ops.whenReady();
      const ready = await t.request('GET', '/readyz', { key: null });
      assert.equal(ready.status, 200, ready.raw);
      assert.deepEqual(ready.body.emulator_init, { scripts: 3, failed: [{ script: '30-fail.sh', exit_code: 3 }] });
      assert.deepEqual(readFileSafe(trace).trim().split('\n').map((l) => l.split(' ')[0]), ['10', '20', '30']);
      // 20-user.sh's user exists.
      const again = await t.request('POST', '/_emu/users', { body: { email: 'from-init@seed.example' } });
      assert.equal(again.status, 409, again.raw);
    } finally {
      writeFileSync(gate, '');
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

function readFileSafe(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

test('a bad seed file stops the start with the file and the field named', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'emu-seed-'));
  const seedFile = join(dir, 'seed.json');
  writeFileSync(seedFile, JSON.stringify({ users: [{ email: 'a@seed.example', api_keys: [{ key: 'short' }] }] }));
  const t = await createTestApp('sqlite', { config: { GPUPLANE_EMU_SEED_FILE: seedFile } });
  try {
    await assert.rejects(t.services.emuLifecycle.beforeListen(), (err: Error) => {
      assert.equal(err.name, 'Error');
      assert.match(err.message, new RegExp(`^GPUPLANE_EMU_SEED_FILE \\(--emu-seed-file\\) ${seedFile.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: users\\[0\\]\\.api_keys\\[0\\]\\.key: `));
      return true;
    });
    writeFileSync(seedFile, '{"users": [');
    await assert.rejects(t.services.emuLifecycle.beforeListen(), /: not JSON \(/);
  } finally {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('without seed settings readiness is not held', async () => {
  const t = await createTestApp('sqlite');
  try {
    const res = await t.request('GET', '/readyz', { key: null });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.emulator_init, undefined);
  } finally {
    await t.close();
  }
});
