// Offer search and instance creation through the CLI (run in the test's process) against a real server (virtual clock):
// the query language on the wire, create instance flags and --wait, and their error paths.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { instanceSteps, useServer } from './cli-helpers.js';

const server = useServer();
const cli = (args: string[], env: Record<string, string | undefined> = {}, onStderr?: (text: string) => void) => server.cli(args, env, onStderr);
const { sdk, offer, instance, waitWhileAdvancing } = instanceSteps(server);

describe('search offers', () => {
  test('the query reaches the server with units converted; human output is a table with units', async () => {
    const raw = await cli(['search', 'offers', 'num_gpus>=2 gpu_ram>=10 reliability>0.5', '-o', 'dph_total', '--limit', '5', '--raw']);
    assert.equal(raw.code, 0, raw.stderr);
    const offers = JSON.parse(raw.stdout);
    assert.ok(offers.length > 0 && offers.length <= 5);
    for (const o of offers) {
      assert.ok(o.num_gpus >= 2);
      assert.ok(o.gpu_ram >= 10_000, 'gpu_ram>=10 (GB) was sent as 10000 MB');
      assert.equal(o.rentable, true, 'default filters apply');
    }
    const prices = offers.map((o: { dph_total: number }) => o.dph_total);
    assert.deepEqual(prices, [...prices].sort((a, b) => a - b), '-o dph_total sorts ascending');

    const human = await cli(['search', 'offers', 'num_gpus>=2', '--limit', '3']);
    const lines = human.stdout.trim().split('\n');
    assert.match(lines[0], /^\s*ID\s+CUDA\s+N\s+Model\s+VRAM GB\s+.*\$\/hr.*R %\s+Max days/);
    assert.equal(lines.length, 4);
  });

  test('-o with a trailing - sorts descending', async () => {
    const r = await cli(['search', 'offers', '-o', 'dph_total-', '--limit', '4', '--raw']);
    const prices = JSON.parse(r.stdout).map((o: { dph_total: number }) => o.dph_total);
    assert.deepEqual(prices, [...prices].sort((a, b) => b - a));
  });

  test('a query that matches nothing says so', async () => {
    const r = await cli(['search', 'offers', 'num_gpus>=1000']);
    assert.equal(r.code, 0);
    assert.equal(r.stdout.trim(), 'no offers match');
  });

  for (const [args, why] of [
    [['search', 'offers', 'gpu_nam=RTX_4090'], /unknown field "gpu_nam"/],
    [['search', 'offers', 'num_gpus=>2'], /unknown operator/],
    [['search', 'offers', '-o', 'price-'], /order: unknown field "price"/],
    [['search', 'offers', '--type', 'cheap'], /Allowed choices are on-demand/],
  ] as const) {
    test(`a malformed search is refused before sending (exit 2): ${args.slice(2).join(' ')}`, async () => {
      // No server at this URL: exit 2 with the reason proves nothing was sent.
      const r = await cli([...args], { GPUPLANE_URL: 'http://127.0.0.1:1' });
      assert.equal(r.code, 2);
      assert.match(r.stderr, why);
    });
  }
});

describe('create instance', () => {
  test('with vastai flags: env and ports, label, runtype; --raw prints new_contract and the instance key', async () => {
    const r = await cli(['create', 'instance', String(await offer()), '--image', 'pytorch/pytorch', '--disk', '20', '--label', 'cli-made',
      '--env', '-e TZ=UTC -p 8080:8080', '--ssh', '--direct', '--onstart-cmd', 'echo up', '--raw']);
    assert.equal(r.code, 0, r.stderr);
    const reply = JSON.parse(r.stdout);
    assert.equal(reply.success, true);
    assert.match(reply.instance_api_key, /\S{16,}/);
    const inst = await sdk().instances.show(reply.new_contract);
    assert.equal(inst.label, 'cli-made');
    assert.equal(inst.disk_space, 20);
    assert.equal(inst.image_uuid, 'pytorch/pytorch');
    assert.equal(inst.image_runtype, 'ssh_direct');
    assert.deepEqual(inst.extra_env, [['TZ', 'UTC']]);
  });

  test('--args takes the rest verbatim (runtype args)', async () => {
    const r = await cli(['create', 'instance', String(await offer()), '--image', 'alpine', '--raw', '--args', 'sh', '-c', 'echo hi --label x']);
    assert.equal(r.code, 0, r.stderr);
    const inst = await sdk().instances.show(JSON.parse(r.stdout).new_contract);
    assert.equal(inst.image_runtype, 'args');
    assert.equal(inst.label ?? null, null, '--label after --args is an argument, not an option');
  });

  test('--wait shows the state on a status line and ends when running, with the ssh URL', async () => {
    const id = await offer();
    const r = await waitWhileAdvancing(['create', 'instance', String(id), '--image', 'alpine', '--ssh', '--direct', '--wait', '--timeout', '30']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^created instance (\d+) from offer/m);
    assert.match(r.stdout, /^instance \d+ is running \(ssh:\/\/root@[\d.]+:\d+\)$/m);
    assert.match(r.stderr, /^instance \d+: running \(\d+s\)$/m);
  });

  test('errors: no image (exit 2, nothing sent); a malformed --env (exit 2); an offer that never existed (404 from the server)', async () => {
    const a = await cli(['create', 'instance', '5', '--ssh'], { GPUPLANE_URL: 'http://127.0.0.1:1' });
    assert.equal(a.code, 2);
    assert.match(a.stderr, /needs --image or --template_hash/);
    const b = await cli(['create', 'instance', '5', '--image', 'x', '--env', 'TZ=UTC'], { GPUPLANE_URL: 'http://127.0.0.1:1' });
    assert.equal(b.code, 2);
    assert.match(b.stderr, /--env: expected -e NAME=VALUE/);
    const c = await cli(['create', 'instance', '999999', '--image', 'alpine']);
    assert.equal(c.code, 1);
    assert.equal(c.stderr, 'gpuplane: offer 999999 does not exist: no machine offers it (search offers for the ids on the market) (HTTP 404, not_found)\n');
    const d = await cli(['create', 'instance', 'abc', '--image', 'alpine']);
    assert.equal(d.code, 2);
  });
});

