// Deployments through the CLI (run in the test's process) against a real server with a blob store configured:
// `show deployments`, `show deployment ID`, `show deployment-versions ID`, `delete deployment ID | --name N [--tag T]`,
// as vastai names them (docs/spec/client-compat-more.md §e), and their error paths. The deployments are made with
// the SDK, as the serverless SDK's deploy flow makes them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OWNER_KEY, useServer } from './cli-helpers.js';
import { createClient } from '../src/sdk/client.js';

const server = useServer(['--blob-store-url', 'http://blobs.internal:9000/deploy']);
const cli = (args: string[]) => server.cli(args);
const sdk = () => createClient({ url: server.url(), apiKey: OWNER_KEY });
const config = (name: string, patch: Record<string, unknown> = {}) => ({
  name, image: 'vastai/base-image:latest', file_hash: 'cafe01', file_size: 100, search_params: 'num_gpus=999', cold_workers: 0, ...patch,
});

test('show deployments, show deployment, show deployment-versions, delete deployment', async () => {
  const a = await sdk().deployments.put(config('cli-app'));
  await sdk().deployments.put(config('cli-app', { file_hash: 'cafe02', version_label: 'second' }));
  const b = await sdk().deployments.put(config('cli-app', { tag: 'prod' }));
  await sdk().deployments.put(config('other'));

  const table = await cli(['show', 'deployments']);
  assert.equal(table.code, 0, table.stderr);
  const lines = table.stdout.trim().split('\n');
  assert.match(lines[0], /^\s*ID\s+Name\s+Tag\s+Image\s+Endpoint\s+Workers\s+Hash\s+Version/);
  assert.match(table.stdout, new RegExp(`^\\s*${a.deployment_id}\\s+cli-app\\s+default\\s+vastai/base-image:latest\\s+${a.endpoint_id}\\s+0\\s+cafe02\\s`, 'm'));
  const raw = JSON.parse((await cli(['show', 'deployments', '--raw'])).stdout);
  assert.deepEqual(raw.map((d: { name: string; tag: string }) => `${d.name}:${d.tag}`), ['cli-app:default', 'cli-app:prod', 'other:default']);

  const one = await cli(['show', 'deployment', String(a.deployment_id)]);
  assert.equal(one.code, 0, one.stderr);
  assert.match(one.stdout, /^name\s+cli-app$/m);
  assert.match(one.stdout, /^version_label\s+second$/m);
  assert.match(one.stdout, new RegExp(`^s3_key\\s+deployments/${a.deployment_id}/cafe02\\.tar\\.gz$`, 'm'));
  assert.match(one.stdout, /^created_at \(UTC\)\s+2027-01-15/m);

  const versions = await cli(['show', 'deployment-versions', String(a.deployment_id)]);
  assert.equal(versions.code, 0, versions.stderr);
  const vlines = versions.stdout.trim().split('\n');
  assert.match(vlines[0], /^\s*ID\s+Current\s+Label\s+Hash/);
  assert.match(vlines[1], /^\s*\d+\s+yes\s+second\s+cafe02\s/);
  assert.match(vlines[2], /^\s*\d+\s+no\s+-?\s*cafe01\s/);

  const stop = await cli(['stop', 'deployment', String(a.deployment_id)]);
  assert.equal(stop.code, 0, stop.stderr);
  assert.equal(stop.stdout.trim(), `deployment ${a.deployment_id} stopped`);
  assert.match((await cli(['show', 'deployment', String(a.deployment_id)])).stdout, /^endpoint_state\s+stopped$/m);
  assert.equal((await cli(['start', 'deployment', String(a.deployment_id)])).stdout.trim(), `deployment ${a.deployment_id} started`);

  const byTag = await cli(['delete', 'deployment', '--name', 'cli-app', '--tag', 'prod']);
  assert.equal(byTag.code, 0, byTag.stderr);
  assert.equal(byTag.stdout.trim(), 'deleted 1 deployment(s)');
  const shownGone = await cli(['show', 'deployment', String(b.deployment_id)]);
  assert.equal(shownGone.code, 1);
  assert.match(shownGone.stderr, new RegExp(`deployment ${b.deployment_id} not found`));
  const byId = await cli(['delete', 'deployment', String(a.deployment_id)]);
  assert.equal(byId.code, 0, byId.stderr);
  assert.equal(byId.stdout.trim(), `deployment ${a.deployment_id} deleted`);
  const none = await cli(['delete', 'deployment', '--name', 'cli-app']);
  assert.equal(none.code, 1);
  assert.match(none.stderr, /no deployment named "cli-app"/);
  assert.deepEqual(JSON.parse((await cli(['show', 'deployments', '--raw'])).stdout).map((d: { name: string }) => d.name), ['other']);
});

test('delete deployment: usage errors are caught before anything is sent', async () => {
  for (const [args, msg] of [
    [['delete', 'deployment'], /give a deployment id or --name NAME/],
    [['delete', 'deployment', '3', '--name', 'x'], /give a deployment id or --name, not both/],
    [['delete', 'deployment', '--tag', 'prod'], /--tag needs --name/],
    [['delete', 'deployment', 'abc'], /id/],
  ] as const) {
    const r = await cli([...args]);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, msg);
  }
});
