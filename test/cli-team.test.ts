// Team, roles and charges (table and tree) through the CLI (run in the test's process) against a real server (virtual clock).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createClient } from '../src/sdk/client.js';

import { OWNER_KEY, T0, useServer } from './cli-helpers.js';

const server = useServer();
const cli = (args: string[], env: Record<string, string | undefined> = {}) => server.cli(args, env);
const sdk = (apiKey = OWNER_KEY) => createClient({ url: server.url(), apiKey });
let userN = 0;
const newUser = (extra: Record<string, unknown> = {}) => sdk().emulator.createUser({ email: `cli-acct-${process.pid}-${userN++}@example.com`, ...extra });

describe('team and roles', () => {
  test('create team, roles (create, show, list, update, remove), invite and show members, destroy team', async () => {
    const { api_key } = await newUser();
    const env = { GPUPLANE_API_KEY: api_key };
    const t = await cli(['create', 'team', '--team_name', 'cli-team', '--raw'], env);
    assert.equal(t.code, 0, t.stderr);
    const perms = join(server.home(), 'viewer.json');
    writeFileSync(perms, JSON.stringify({ api: { instance_read: {} } }));
    const c = await cli(['create', 'team-role', '--name', 'viewer', '--permissions', perms, '--raw'], env);
    assert.equal(c.code, 0, c.stderr);
    const roleId = JSON.parse(c.stdout).id;
    const show = await cli(['show', 'team-role', 'viewer'], env);
    assert.match(show.stdout, new RegExp(`^\\s*${roleId}\\s+viewer\\s+instance_read`, 'm'));
    const missing = await cli(['show', 'team-role', 'nobody'], env);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /HTTP 404, not_found/);
    assert.match((await cli(['show', 'team-roles'], env)).stdout, /viewer/);
    assert.equal((await cli(['update', 'team-role', String(roleId), '--name', 'watcher'], env)).code, 0);
    assert.match((await cli(['show', 'team-roles'], env)).stdout, /watcher/);

    const inv = await cli(['invite', 'member', '--email', 'cli-invitee@example.com', '--role', 'watcher'], env);
    assert.equal(inv.code, 0, inv.stderr);
    const members = await cli(['show', 'members'], env);
    assert.match(members.stdout, /^\s*ID\s+E-mail\s+Role\s+Joined \(UTC\)$/m);
    assert.match(members.stdout, /Invitations:\n.*\n.*cli-invitee@example\.com\s+watcher/);
    const noRole = await cli(['remove', 'member', '999999'], env);
    assert.equal(noRole.code, 1);

    const held = await cli(['remove', 'team-role', 'watcher'], env);
    assert.equal(held.code, 1, 'a role held by an invitation stays');
    assert.match(held.stderr, /change their role first \(HTTP 409, conflict\)/);
    writeFileSync(perms, JSON.stringify({ api: { user_read: {} } }));
    assert.equal((await cli(['create', 'team-role', '--name', 'spare', '--permissions', perms], env)).code, 0);
    assert.equal((await cli(['remove', 'team-role', 'spare'], env)).code, 0);
    assert.doesNotMatch((await cli(['show', 'team-roles'], env)).stdout, /spare/);
    assert.equal((await cli(['destroy', 'team'], env)).code, 0);
    const after = await cli(['show', 'members'], env);
    assert.equal(after.code, 1);
  });
});

describe('charges', () => {
  test('an instance that ran shows up in the table and the tree; --raw is the API reply', async () => {
    const { api_key } = await newUser({ credit: 50 });
    const client = sdk(api_key);
    const { offers } = await client.offers.search({ num_gpus: { eq: 1 }, rentable: { eq: true }, rented: { eq: false }, limit: 1 });
    const { new_contract: id } = await client.instances.create(offers[0].id, { image: 'alpine' });
    await sdk().emulator.advance(2 * 3600);
    const env = { GPUPLANE_API_KEY: api_key };
    const day = new Date(T0 * 1000).toISOString().slice(0, 10);
    const range = ['-s', day, '-e', String(T0 + 3 * 86400)];
    const table = await cli(['show', 'charges', ...range], env);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout.split('\n')[0], /^Source\s+Type\s+Description\s+Start \(UTC\)\s+End \(UTC\)\s+Amount \$$/);
    assert.match(table.stdout, new RegExp(`^instance-${id}\\s+instance\\s+.*\\s+\\d+\\.\\d{4}$`, 'm'));
    assert.match(table.stdout, /^1 of 1 contract, \$\d+\.\d{4} on this page$/m);
    const raw = JSON.parse((await cli(['show', 'charges', ...range, '--raw'], env)).stdout);
    assert.equal(raw.results[0].source, `instance-${id}`);
    assert.ok(raw.results[0].amount > 0);
    const tree = await cli(['show', 'charges', ...range, '--format', 'tree'], env);
    assert.match(tree.stdout, new RegExp(`^instance-${id}  .*\\$\\d+\\.\\d{4}`, 'm'));
    assert.match(tree.stdout, /^ {2}gpu  /m, 'items are indented under their contract');
    const none = await cli(['show', 'charges', '-s', '2020-01-01', '-e', '2020-01-02'], env);
    assert.match(none.stdout, /no charges in that period/);
  });

  test('a malformed date or type is a usage error', async () => {
    assert.equal((await cli(['show', 'charges', '-s', 'yesterday'])).code, 2);
    assert.equal((await cli(['show', 'charges', '--types', 'instance,gpu'])).code, 2);
    assert.equal((await cli(['show', 'charges', '--format', 'pie'])).code, 2);
  });
});

