// Issue 34 item 2: `gpuplane emu seed FILE`, a seed document applied to a running emulator.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { useServer } from './cli-helpers.js';

const server = useServer();
const KEY = 'cli-seeded-key-0123456789abcdef';

test('emu seed FILE: applied, then kept when applied again; the chosen key authenticates', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'emu-seed-cli-'));
  try {
    const file = join(dir, 'seed.json');
    writeFileSync(file, JSON.stringify({ users: [{ email: 'cli-seed@example.com', credit: 7, api_keys: [{ key: KEY }] }], machines: [{ gpu_name: 'L40S', count: 2 }] }));
    const first = await server.cli(['emu', 'seed', file]);
    assert.equal(first.code, 0, first.stderr);
    assert.equal(first.stdout, 'users: 1 created, 0 already there; API keys added: 1\nmachines added: 2\ntemplates added: 0, SSH keys added: 0, variables added: 0\n');
    const again = await server.cli(['emu', 'seed', file, '--raw']);
    assert.equal(again.code, 0, again.stderr);
    const raw = JSON.parse(again.stdout);
    assert.deepEqual(raw.users.map((u: any) => [u.email, u.created, u.api_keys_added]), [['cli-seed@example.com', false, 0]]);
    const me = await fetch(`${server.url()}/api/v0/users/current/`, { headers: { authorization: `Bearer ${KEY}` } });
    assert.equal(me.status, 200);
    assert.equal((await me.json()).credit, 7);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('emu seed: a bad seed names the field; a missing file or one that is not JSON is a usage error', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'emu-seed-cli-'));
  try {
    const file = join(dir, 'seed.json');
    writeFileSync(file, JSON.stringify({ machines: [{ num_gpus: 'eight' }] }));
    const bad = await server.cli(['emu', 'seed', file]);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /machines\[0\]\.num_gpus: /);
    const missing = await server.cli(['emu', 'seed', join(dir, 'nope.json')]);
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /cannot read .*nope\.json/);
    writeFileSync(file, '{');
    const notJson = await server.cli(['emu', 'seed', file]);
    assert.notEqual(notJson.code, 0);
    assert.match(notJson.stderr, /seed\.json is not JSON/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
