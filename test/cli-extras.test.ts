// The CLI and SDK of issue 14's account and host extras against a real server: prepay instance, show deposit, launch
// instance, search offers --new, search benchmarks, show instance-filters, show contracts, unlist volume, clusters,
// and the commands this server answers with a 503 (clone volume, overlays, network disks and volumes).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient } from '../src/sdk/client.js';
import { GpuplaneError } from '../src/sdk/errors.js';
import { OWNER_KEY, useServer } from './cli-helpers.js';
import { OFFER_ID_STRIDE } from '../src/machines/machines-offers-contract.js';

const server = useServer();
const sdk = (apiKey = OWNER_KEY) => createClient({ url: server.url(), apiKey });
let n = 0;

async function user(credit = 1000) {
  const { user: u, api_key } = await sdk().emulator.createUser({ email: `cli-extras-${process.pid}-${n++}@example.com`, credit });
  return { id: u.id, key: api_key, cli: (args: string[]) => server.cli(args, { GPUPLANE_API_KEY: api_key }) };
}

describe('instance extras', () => {
  test('launch instance, prepay instance, show deposit, show contracts, show instance-filters', async () => {
    const u = await user();
    const m = await sdk().emulator.addMachine({ gpu_name: 'RTX 5090', num_gpus: 1, price_gpu: 0.5, price_disk: 0, geolocation: 'CliLaunchZZ' });
    const launched = await u.cli(['launch', 'instance', '-g', 'RTX_5090', '-n', '1', '-i', 'pytorch/pytorch', '-r', 'CliLaunchZZ', '--label', 'cli', '--ssh']);
    assert.equal(launched.code, 0, launched.stderr);
    const [, id, offer] = /^launched instance (\d+) from offer (\d+)$/m.exec(launched.stdout)!;
    assert.equal(Number(offer), m.offer_ids.find((o) => o % OFFER_ID_STRIDE === 1));

    // $365 at $0.50/hour is a month: 20 %.
    const paid = await u.cli(['prepay', 'instance', id, '365']);
    assert.equal(paid.code, 0, paid.stderr);
    assert.match(paid.stdout, new RegExp(`^prepaid for 1\\.25 months of instance ${id} applying \\$365 credits for a discount of 20% \\(deposit \\$365\\)$`, 'm'));
    const dep = JSON.parse((await u.cli(['show', 'deposit', id, '--raw'])).stdout);
    assert.deepEqual([dep.deposit, dep.discount_rate, dep.dph_list, dep.dph_discounted], [365, 0.2, 0.5, 0.4]);
    assert.match((await u.cli(['show', 'deposit', id])).stdout, /discount_rate\s+0\.2/);

    const contracts = await u.cli(['show', 'contracts', '--label', 'cli', '--raw']);
    assert.deepEqual(JSON.parse(contracts.stdout).map((c: any) => c.id), [Number(id)]);
    const filters = JSON.parse((await u.cli(['show', 'instance-filters', '--raw'])).stdout);
    assert.deepEqual(filters.map((f: any) => f.gpu_name), ['RTX 5090']);

    const none = await u.cli(['launch', 'instance', '-g', 'RTX_5090', '-n', '8', '-i', 'pytorch/pytorch']);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /no offer matches q/);
    const tooMuch = await u.cli(['prepay', 'instance', id, '100000']);
    assert.equal(tooMuch.code, 1);
    assert.match(tooMuch.stderr, /not enough credit/);
  });

  test('search offers --new shows what search offers shows; search benchmarks', async () => {
    const u = await user();
    await sdk().emulator.addMachine({ gpu_name: 'RTX 3060', num_gpus: 3, geolocation: 'CliNew, ZZ' });
    const q = ['search', 'offers', 'geolocation=CliNew,_ZZ', '-o', 'num_gpus-', '--raw'];
    const old = JSON.parse((await u.cli(q)).stdout);
    const fresh = await u.cli([...q, '--new']);
    assert.equal(fresh.code, 0, fresh.stderr);
    assert.deepEqual(JSON.parse(fresh.stdout), old);
    assert.deepEqual(old.map((o: any) => o.num_gpus), [3, 2, 1]);

    const empty = await u.cli(['search', 'benchmarks', 'gpu_name=RTX_3060']);
    assert.equal(empty.code, 0, empty.stderr);
    assert.equal(empty.stdout.trim(), 'no benchmark results match');
    const m = await sdk().emulator.addMachine({ gpu_name: 'RTX 3060', num_gpus: 1 });
    const added = await server.cli(['emu', 'add-benchmark', String(m.machine_id), '17.25', '--template-hash', 'cafe'], { GPUPLANE_API_KEY: OWNER_KEY });
    assert.equal(added.code, 0, added.stderr);
    const found = await u.cli(['search', 'benchmarks', 'gpu_name=RTX_3060', 'score>17']);
    assert.match(found.stdout, new RegExp(`\\b${m.machine_id}\\s+RTX 3060\\s+1\\s+17\\.25\\s+perf\\s+cafe\\b`));
    const bad = await u.cli(['search', 'benchmarks', 'flavour=sweet']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /unknown field "flavour"/);
  });
});

describe('host extras', () => {
  test('unlist volume, clusters; what this server lacks is a 503 saying so (exit 1)', async () => {
    const h = await user(10);
    const m = await sdk().emulator.addMachine({ owner_user_id: h.id, num_gpus: 2 });
    const m2 = await sdk().emulator.addMachine({ owner_user_id: h.id, num_gpus: 2 });
    const unlisted = await h.cli(['unlist', 'volume', String(m.machine_id * OFFER_ID_STRIDE)]);
    assert.equal(unlisted.code, 0, unlisted.stderr);
    assert.match(unlisted.stdout, /unlisted: no new volumes/);

    const created = await h.cli(['create', 'cluster', '10.0.0.0/24', String(m.machine_id)]);
    assert.equal(created.code, 0, created.stderr);
    const id = /cluster (\d+) created/.exec(created.stdout)![1];
    assert.equal((await h.cli(['join', 'cluster', id, String(m2.machine_id)])).code, 0);
    const shown = await h.cli(['show', 'clusters']);
    assert.match(shown.stdout, new RegExp(`^\\s*${id}\\s+10\\.0\\.0\\.0/24\\s+2\\s+${m.machine_id}\\s+${m.machine_id},${m2.machine_id}`, 'm'));
    const rm = await h.cli(['remove-machine-from-cluster', id, String(m.machine_id), String(m2.machine_id)]);
    assert.equal(rm.code, 0, rm.stderr);
    assert.equal((await h.cli(['delete', 'cluster', id])).code, 0);
    assert.equal((await h.cli(['show', 'clusters'])).stdout.trim(), 'no clusters');

    for (const args of [['clone', 'volume', '1', '100'], ['create', 'overlay', '1', 'net'], ['add', 'network-disk', '1', '/mnt/x'], ['create', 'network-volume', '5']]) {
      const r = await h.cli(args);
      assert.equal(r.code, 1, `${args.join(' ')}: ${r.stdout}`);
      assert.match(r.stderr, /not available on this gpuplane/, args.join(' '));
    }
    assert.equal((await h.cli(['show', 'overlays'])).stdout.trim(), 'no overlays');
    assert.equal((await h.cli(['show', 'network-disks'])).stdout.trim(), 'no network disks');
    assert.equal((await h.cli(['search', 'network-volumes'])).stdout.trim(), 'no network volume offers');
    await assert.rejects(sdk(h.key).network.createOverlay(1, 'net'), (e: unknown) => e instanceof GpuplaneError && e.status === 503 && e.error === 'service_unavailable');
  });
});
