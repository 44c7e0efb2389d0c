// `gpuplane transfer credit`, `show invoices`, `search invoices` against a real server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient } from '../src/sdk/client.js';
import { OWNER_KEY, useServer } from './cli-helpers.js';

const server = useServer();

test('transfer credit, then the invoices of both sides show it; search invoices filters; errors in the server\'s words', async () => {
  const owner = createClient({ url: server.url(), apiKey: OWNER_KEY });
  const a = await owner.emulator.createUser({ email: `cli-pay-a-${process.pid}@example.com`, credit: 20 });
  const b = await owner.emulator.createUser({ email: `cli-pay-b-${process.pid}@example.com`, credit: 0 });
  const asA = (args: string[]) => server.cli(args, { GPUPLANE_API_KEY: a.api_key });
  const asB = (args: string[]) => server.cli(args, { GPUPLANE_API_KEY: b.api_key });

  const sent = await asA(['transfer', 'credit', b.user.email, '7.5']);
  assert.equal(sent.code, 0, sent.stderr);
  assert.equal(sent.stdout.trim(), `Sent $7.5 to ${b.user.email}`);
  const over = await asA(['transfer', 'credit', b.user.email, '100']);
  assert.equal(over.code, 1);
  assert.match(over.stderr, /not enough credit/);

  const inv = await asB(['show', 'invoices']);
  assert.equal(inv.code, 0, inv.stderr);
  assert.match(inv.stdout, /payment\s+credit received from user \d+\s+-\s+7\.5000$/m);
  // Charges and payments are totalled apart; no "Total" adds the two (issue 29 item 10).
  assert.doesNotMatch(inv.stdout, /^Total/m);
  assert.match(inv.stdout, /^Charges: \$0\.0000 \(0 charges\)$/m);
  assert.match(inv.stdout, /^Payments: \$7\.5000 \(1 payment\)$/m);
  const invA = await asA(['show', 'invoices']);
  assert.equal(invA.code, 0, invA.stderr);
  assert.match(invA.stdout, /^Payments: \$12\.5000 \(2 payments\)$/m, invA.stdout);
  const onlyCharges = await asB(['show', 'invoices', '--only-charges']);
  assert.match(onlyCharges.stdout, /^Charges: /m);
  assert.doesNotMatch(onlyCharges.stdout, /^Payments: /m);
  assert.match(inv.stdout, /^Credit now: \$7\.50$/m);

  const credits = await asA(['search', 'invoices', 'is_credit=true', '--raw']);
  assert.equal(credits.code, 0, credits.stderr);
  assert.deepEqual(JSON.parse(credits.stdout).map((r: { amount_cents: number }) => r.amount_cents), [2000]);
  const bad = await asA(['search', 'invoices', 'nope=1']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /unknown field "nope"/);
});
