// Account-side CLI commands (the CLI run in the test's process) against a real server: templates, SSH keys and API keys, with their
// error paths.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createClient } from '../src/sdk/client.js';

import { OWNER_KEY, useServer } from './cli-helpers.js';

const server = useServer();
const cli = (args: string[], env: Record<string, string | undefined> = {}) => server.cli(args, env);
const sdk = (apiKey = OWNER_KEY) => createClient({ url: server.url(), apiKey });
let userN = 0;
const newUser = (extra: Record<string, unknown> = {}) => sdk().emulator.createUser({ email: `cli-acct-${process.pid}-${userN++}@example.com`, ...extra });

describe('templates', () => {
  test('create (offer filters in GB sent in MB), search with a query, update (new hash_id), delete', async () => {
    const c = await cli(['create', 'template', '--name', 'cli-tpl', '--image', 'pytorch/pytorch', '--image_tag', '2.4', '--ssh', '--direct',
      '--env', '-e A=1 -p 8080:8080', '--disk_space', '20', '--search_params', 'gpu_ram>=23 num_gpus=1', '--raw']);
    assert.equal(c.code, 0, c.stderr);
    const t = JSON.parse(c.stdout).template;
    assert.equal(t.runtype, 'ssh');
    assert.equal(t.ssh_direct, true);
    assert.equal(t.recommended_disk_space, 20);
    assert.deepEqual(t.extra_filters.gpu_ram, { gte: 23000 });
    assert.deepEqual(t.extra_filters.verified, { eq: true }, 'default offer filters');

    const s = await cli(['search', 'templates', 'name=cli-tpl recommended_disk_space>=20']);
    assert.equal(s.code, 0, s.stderr);
    assert.match(s.stdout.split('\n')[0], /^\s*ID\s+Hash\s+Name\s+Image\s+Tag\s+Runtype\s+Disk GB\s+Private/);
    assert.match(s.stdout, new RegExp(`^\\s*${t.id}\\s+${t.hash_id}\\s+cli-tpl\\s+pytorch/pytorch\\s+2\\.4\\s+ssh\\s+20`, 'm'));

    const u = await cli(['update', 'template', t.hash_id, '--desc', 'new words', '--raw']);
    assert.equal(u.code, 0, u.stderr);
    const t2 = JSON.parse(u.stdout).template;
    assert.equal(t2.desc, 'new words');
    assert.notEqual(t2.hash_id, t.hash_id);
    assert.equal(t2.image, 'pytorch/pytorch', 'fields not given are kept');

    const d = await cli(['delete', 'template', '--template-id', String(t.id)]);
    assert.equal(d.code, 0, d.stderr);
    const again = await cli(['delete', 'template', '--template-id', String(t.id)]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /HTTP 404, not_found/);
  });

  test('usage errors are caught before sending (exit 2)', async () => {
    const off = { GPUPLANE_URL: 'http://127.0.0.1:1' };
    for (const [args, why] of [
      [['create', 'template', '--image', 'x'], /needs --name and --image/],
      [['delete', 'template'], /exactly one of --template-id and --hash-id/],
      [['update', 'template', 'abc'], /nothing to change/],
      [['search', 'templates', 'stars>5'], /unknown field "stars"/],
      [['create', 'template', '--name', 'a', '--image', 'b', '--search_params', 'gpu_nam=1'], /unknown field "gpu_nam"/],
    ] as const) {
      const r = await cli([...args], off);
      assert.equal(r.code, 2, args.join(' '));
      assert.match(r.stderr, why);
    }
  });
});

describe('ssh keys', () => {
  const pub = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGq2fJx3y8mVb4r9KZ1nQ0Pp7wX5sT2uL6dE8hC4aB1f cli@test';
  test('create (inline and from a .pub file), show, update, delete', async () => {
    const file = join(server.home(), 'id.pub');
    const other = pub.replace('KZ1nQ0', 'KZ2nQ0');
    writeFileSync(file, `${other}\n`);
    const a = await cli(['create', 'ssh-key', pub, '--raw']);
    assert.equal(a.code, 0, a.stderr);
    const id = JSON.parse(a.stdout).key.id;
    const b = await cli(['create', 'ssh-key', file, '--raw']);
    assert.equal(b.code, 0, b.stderr);
    assert.equal(JSON.parse(b.stdout).key.ssh_key, other);
    const list = await cli(['show', 'ssh-keys']);
    assert.match(list.stdout.split('\n')[0], /^\s*ID\s+Key\s+Created \(UTC\)$/);
    assert.match(list.stdout, new RegExp(`^\\s*${id}\\s+ssh-ed25519 `, 'm'));
    assert.equal((await cli(['update', 'ssh-key', String(id), pub.replace('KZ1nQ0', 'KZ3nQ0')])).code, 0);
    assert.equal((await cli(['delete', 'ssh-key', String(id)])).code, 0);
    const gone = await cli(['delete', 'ssh-key', String(id)]);
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /HTTP 404/);
  });

  test('a private key or a non-key is refused before it leaves the machine', async () => {
    const r = await cli(['create', 'ssh-key', '--', '-----BEGIN OPENSSH PRIVATE KEY----- abc'], { GPUPLANE_URL: 'http://127.0.0.1:1' });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /private SSH key/);
    const n = await cli(['create', 'ssh-key', 'hello'], { GPUPLANE_URL: 'http://127.0.0.1:1' });
    assert.equal(n.code, 2);
  });
});

describe('api keys', () => {
  test('create with a permission file: the secret is printed once and is scoped; show; delete revokes it', async () => {
    const perms = join(server.home(), 'perms.json');
    writeFileSync(perms, JSON.stringify({ api: { user_read: {} } }));
    const c = await cli(['create', 'api-key', '--name', 'readonly', '--permission_file', perms, '--raw']);
    assert.equal(c.code, 0, c.stderr);
    const { id, key } = JSON.parse(c.stdout);
    assert.equal((await cli(['show', 'user'], { GPUPLANE_API_KEY: key })).code, 0);
    const denied = await cli(['show', 'instances'], { GPUPLANE_API_KEY: key });
    assert.equal(denied.code, 1);
    assert.match(denied.stderr, /HTTP 403, permission_denied/);

    const list = await cli(['show', 'api-keys']);
    assert.match(list.stdout.split('\n')[0], /^\s*ID\s+Name\s+Team\s+Permissions\s+Created \(UTC\)\s+Last used \(UTC\)$/);
    assert.match(list.stdout, new RegExp(`^\\s*${id}\\s+readonly\\s+-\\s+user_read`, 'm'));
    assert.ok(!list.stdout.includes(key), 'the list never shows secrets');
    const one = await cli(['show', 'api-key', String(id)]);
    assert.match(one.stdout, /^name\s+readonly$/m);

    assert.equal((await cli(['delete', 'api-key', String(id)])).code, 0);
    const revoked = await cli(['show', 'user'], { GPUPLANE_API_KEY: key });
    assert.equal(revoked.code, 1);
    assert.match(revoked.stderr, /HTTP 401, auth_error/);
  });

  test('a missing or non-JSON permission file is a usage error', async () => {
    const bad = join(server.home(), 'bad.json');
    writeFileSync(bad, 'not json');
    assert.equal((await cli(['create', 'api-key', '--permission_file', join(server.home(), 'nope.json')])).code, 2);
    const r = await cli(['create', 'api-key', '--permission_file', bad]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /is not JSON/);
  });
});

