// `gpuplane create subaccount`, `show subaccounts` and funding with `transfer credit`, against a real server; the
// hint printed after creating one works.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient } from '../src/sdk/client.js';
import { OWNER_KEY, useServer } from './cli-helpers.js';

const server = useServer();

test('create a host-only subaccount, see it, fund it, verify its address with the hinted command', async () => {
  const owner = createClient({ url: server.url(), apiKey: OWNER_KEY });
  const parent = await owner.emulator.createUser({ email: `cli-sub-parent-${process.pid}@example.com`, credit: 30 });
  const asParent = (args: string[], input?: string) => server.cli(args, { GPUPLANE_API_KEY: parent.api_key }, undefined, input);
  const addr = `cli-sub-bob-${process.pid}@example.com`;

  const made = await asParent(['create', 'subaccount', '--email', addr, '--username', 'bob', '--type', 'host', '--password-stdin'], 'correct horse battery\n');
  assert.equal(made.code, 0, made.stderr);
  const m = new RegExp(`^subaccount (\\d+) created \\(host only\\); a verification code was sent to ${addr}; fund it with transfer credit\\nthen: \`gpuplane (verify email --email ${addr} --code CODE)\`$`).exec(made.stdout.trim());
  assert.ok(m, made.stdout);
  const id = Number(m[1]);

  const sent = await asParent(['transfer', 'credit', addr, '7.25']);
  assert.equal(sent.code, 0, sent.stderr);
  const shown = await asParent(['show', 'subaccounts']);
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, new RegExp(`^\\s*${id}\\s+bob\\s+${addr}\\s+\\$7\\.25\\s+yes\\s+no\\s*$`, 'm'));

  const code = (await owner.emulator.outbox({ to: addr, channel: 'email' })).messages.at(-1)?.code;
  assert.ok(code);
  const verified = await server.cli(m[2].replace('CODE', code).split(' '), { GPUPLANE_API_KEY: undefined });
  assert.equal(verified.code, 0, verified.stderr);
  const raw = JSON.parse((await asParent(['--raw', 'show', 'subaccounts'])).stdout);
  assert.deepEqual(raw.map((u: any) => [u.id, u.email_verified, u.credit, u.host_only, u.parent_id]), [[id, true, 7.25, true, parent.user.id]]);

  assert.equal((await asParent(['create', 'subaccount', '--email', 'x@example.com', '--type', 'renter', '--password', 'correct horse'])).code, 2);
});
