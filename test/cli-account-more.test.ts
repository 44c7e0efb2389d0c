// Account commands of client-compat-more §b against a real server: env-vars, reset api-key, audit-logs, ipaddrs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer } from './cli-helpers.js';

const server = useServer();
const cli = (args: string[]) => server.cli(args, {});

test('create, show (masked, then with -s), update, delete, and the errors in the server\'s words', async () => {
  assert.equal((await cli(['create', 'env-var', 'CLI_TOKEN', 'tok en=1'])).code, 0);
  const masked = await cli(['show', 'env-vars']);
  assert.equal(masked.code, 0, masked.stderr);
  assert.match(masked.stdout, /^CLI_TOKEN=\*{5}$/m);
  assert.doesNotMatch(masked.stdout, /tok en=1/);
  const shown = await cli(['show', 'env-vars', '-s']);
  assert.match(shown.stdout, /^CLI_TOKEN=tok en=1$/m);
  assert.deepEqual(JSON.parse((await cli(['show', 'env-vars', '-s', '--raw'])).stdout).CLI_TOKEN, 'tok en=1');

  const dup = await cli(['create', 'env-var', 'CLI_TOKEN', 'x']);
  assert.equal(dup.code, 1);
  assert.match(dup.stderr, /already exists/);
  assert.equal((await cli(['update', 'env-var', 'CLI_TOKEN', 'v2'])).code, 0);
  assert.match((await cli(['show', 'env-vars', '-s'])).stdout, /^CLI_TOKEN=v2$/m);
  assert.equal((await cli(['delete', 'env-var', 'CLI_TOKEN'])).code, 0);
  const gone = await cli(['delete', 'env-var', 'CLI_TOKEN']);
  assert.equal(gone.code, 1);
  assert.match(gone.stderr, /not found/);
});

test('reset api-key prints the new key once; the old one is refused from then on', async () => {
  const made = await cli(['create', 'api-key', '--name', 'to-reset', '--raw']);
  const old = JSON.parse(made.stdout).key as string;
  const r = await server.cli(['reset', 'api-key'], { GPUPLANE_API_KEY: old });
  assert.equal(r.code, 0, r.stderr);
  const fresh = /^New api-key: (\S+)$/m.exec(r.stdout)?.[1];
  assert.ok(fresh && fresh !== old, r.stdout);
  assert.equal((await server.cli(['show', 'user'], { GPUPLANE_API_KEY: old })).code, 1);
  assert.equal((await server.cli(['show', 'user'], { GPUPLANE_API_KEY: fresh })).code, 0);
});

test('show audit-logs lists what the key did; show ipaddrs the loopback address', async () => {
  await cli(['create', 'env-var', 'AUDITED_VAR', 'v']);
  const log = await cli(['show', 'audit-logs']);
  assert.equal(log.code, 0, log.stderr);
  assert.match(log.stdout.split('\n')[0], /^Time \(UTC\)\s+Action\s+Route\s+Key\s+Address$/);
  assert.match(log.stdout, /env_var\.created\s+POST \/api\/v0\/secrets\//);
  const ips = await cli(['show', 'ipaddrs']);
  assert.equal(ips.code, 0, ips.stderr);
  assert.match(ips.stdout, /^127\.0\.0\.1\t/m);
});

test('show connections: none yet', async () => {
  const r = await cli(['show', 'connections']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout.trim(), 'no cloud connections');
  assert.deepEqual(JSON.parse((await cli(['show', 'connections', '--raw'])).stdout), []);
});
