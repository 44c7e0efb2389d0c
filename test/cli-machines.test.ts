// The host-side CLI commands as a real process against a real server: show machines/machine/maints/earnings,
// list/unlist machine, set min-bid, set/remove defjob, schedule/cancel maint, cleanup, reports, defrag, delete machine.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient } from '../src/sdk/client.js';
import { OWNER_KEY, T0, useServer } from './cli-helpers.js';

const server = useServer();
const sdk = (apiKey = OWNER_KEY) => createClient({ url: server.url(), apiKey });
let userN = 0;

/** A user who hosts, and the CLI run with their key. */
async function host(): Promise<{ id: number; key: string; cli: (args: string[]) => ReturnType<typeof server.cli> }> {
  const { user, api_key } = await sdk().emulator.createUser({ email: `cli-host-${process.pid}-${userN++}@example.com`, credit: 10 });
  return { id: user.id, key: api_key, cli: (args) => server.cli(args, { GPUPLANE_API_KEY: api_key }) };
}

describe('host commands', () => {
  test('list a machine, show it, change its bid floor and default job, unlist it', async () => {
    const h = await host();
    const m = await sdk().emulator.addMachine({ owner_user_id: h.id, listed: false, num_gpus: 4, price_gpu: 0.5, min_bid: 0.2 });
    const id = m.machine_id;

    const shown = await h.cli(['show', 'machines']);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout.split('\n')[0], /^\s*ID\s+#gpus\s+gpu_name\s+disk GB\s+disk lim/);
    // No agent says whether a simulated machine's disk is limited (issue 29 item 14): '-'.
    assert.match(shown.stdout, new RegExp(`^\\s*${id}\\s+4\\s+RTX 4090\\s+\\d+\\s+-\\s`, 'm'));
    assert.match(shown.stdout, new RegExp(`^\\s*${id}\\s+4\\s+RTX 4090\\s+.*\\bno\\s+no\\s+0\\.5000\\s+0\\.2000`, 'm'));
    const quiet = await h.cli(['show', 'machines', '-q']);
    assert.equal(quiet.stdout.trim(), String(id));

    const listed = await h.cli(['list', 'machine', String(id), '-g', '0.6', '-b', '0.3', '-m', '2', '-e', '12/31/2027', '--raw']);
    assert.equal(listed.code, 0, listed.stderr);
    const reply = JSON.parse(listed.stdout);
    assert.equal(reply.success, true);
    assert.equal(reply.end_date, Date.UTC(2027, 11, 31) / 1000);
    const [row] = JSON.parse((await h.cli(['show', 'machine', String(id), '--raw'])).stdout);
    assert.equal(row.listed, true);
    assert.equal(row.listed_gpu_cost, 0.6);
    assert.equal(row.min_bid_price, 0.3);
    assert.equal(row.min_chunk, 2);

    const bid = await h.cli(['set', 'min-bid', String(id), '--price', '0.35']);
    assert.equal(bid.code, 0, bid.stderr);
    assert.equal((await sdk(h.key).machines.show(id))!.min_bid_price, 0.35);
    const defjob = await h.cli(['set', 'defjob', String(id), '--image', 'me/idle:latest', '--price_gpu', '0.05', '--args', '--threads', '4']);
    assert.equal(defjob.code, 0, defjob.stderr);
    assert.equal((await sdk(h.key).machines.show(id))!.has_defjob, true);
    assert.equal((await h.cli(['remove', 'defjob', String(id)])).code, 0);
    assert.equal((await sdk(h.key).machines.show(id))!.has_defjob, false);

    const unlisted = await h.cli(['unlist', 'machine', String(id)]);
    assert.equal(unlisted.code, 0, unlisted.stderr);
    assert.match(unlisted.stdout, /unlisted/);
    assert.equal((await sdk(h.key).machines.show(id))!.listed, false);

    // Another host's machine is not found; a bad date is a usage error before anything is sent.
    const other = await host();
    const foreign = await other.cli(['unlist', 'machine', String(id)]);
    assert.notEqual(foreign.code, 0);
    assert.match(foreign.stderr, /machine \d+ not found/);
    const badDate = await h.cli(['list', 'machine', String(id), '-e', 'someday']);
    assert.equal(badDate.code, 2, badDate.stderr);
  });

  test('maintenance windows, cleanup, reports, defrag, earnings, delete', async () => {
    const h = await host();
    const m = await sdk().emulator.addMachine({ owner_user_id: h.id, num_gpus: 1 });
    const id = m.machine_id;
    const sdate = T0 + 30 * 86_400;
    const sched = await h.cli(['schedule', 'maint', String(id), '--sdate', String(sdate), '--duration', '2', '--maintenance_category', 'power']);
    assert.equal(sched.code, 0, sched.stderr);
    const maints = await h.cli(['show', 'maints', '--ids', String(id), '--raw']);
    assert.equal(maints.code, 0, maints.stderr);
    assert.deepEqual(JSON.parse(maints.stdout), [{ machine_id: id, start_time: sdate, end_time: sdate + 7200, duration_hours: 2, maintenance_category: 'power' }]);
    const table = await h.cli(['show', 'maints']);
    assert.match(table.stdout, /power/);
    assert.equal((await h.cli(['cancel', 'maint', String(id)])).code, 0);
    assert.deepEqual(await sdk(h.key).machines.maintenances([id]), []);

    const cleanup = await h.cli(['cleanup', 'machine', String(id), '--raw']);
    assert.equal(cleanup.code, 0, cleanup.stderr);
    assert.equal(JSON.parse(cleanup.stdout).deleted, 0);
    const reports = await h.cli(['reports', String(id)]);
    assert.equal(reports.code, 0, reports.stderr);
    assert.match(reports.stdout, /no reports/);
    assert.equal((await h.cli(['defrag', 'machines', String(id)])).code, 0);

    const earnings = await h.cli(['show', 'earnings', '--raw']);
    assert.equal(earnings.code, 0, earnings.stderr);
    const e = JSON.parse(earnings.stdout);
    assert.equal(e.sday, Math.floor(T0 / 86_400), 'the server\'s today');
    assert.equal(e.summary.gross, 0);
    const human = await h.cli(['show', 'earnings', '-s', '2027-01-01', '-e', '2027-01-31']);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /days 2027-01-01 to 2027-01-31, service fee 10\.0 %/);

    const del = await h.cli(['delete', 'machine', String(id)]);
    assert.equal(del.code, 0, del.stderr);
    assert.equal((await h.cli(['show', 'machines', '-q'])).stdout.trim(), '');
  });
});
