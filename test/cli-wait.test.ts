// Instance commands through the CLI (run in the test's process) against a real server (virtual clock): show, start/stop/
// label/destroy, change bid, logs, ssh-url, attach/detach ssh, and `wait instance` on success, failure (exit 3) and
// timeout (exit 4).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { instanceSteps, useServer } from './cli-helpers.js';

const server = useServer();
const cli = (args: string[], env: Record<string, string | undefined> = {}, onStderr?: (text: string) => void) => server.cli(args, env, onStderr);
const { sdk, offer, instance, waitWhileAdvancing } = instanceSteps(server);

describe('instance commands', () => {
  test('show instances / show instance, label, stop, start, destroy', async () => {
    const id = await instance({ label: 'first' });
    const list = await cli(['show', 'instances']);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout.split('\n')[0], /^\s*ID\s+Machine\s+Status\s+N\s+Model\s+.*Disk GB.*\$\/hr.*Label/);
    assert.match(list.stdout, new RegExp(`^\\s*${id}\\s+\\d+\\s+\\S+\\s+1x .*first`, 'm'));
    const raw = JSON.parse((await cli(['show', 'instances', '--raw'])).stdout);
    assert.ok(raw.some((i: { id: number }) => i.id === id));

    assert.equal((await cli(['label', 'instance', String(id), 'second'])).code, 0);
    const shown = await cli(['show', 'instance', String(id)]);
    assert.match(shown.stdout, /^label\s+second$/m);

    assert.equal((await cli(['stop', 'instance', String(id)])).code, 0);
    assert.equal((await sdk().instances.show(id)).intended_status, 'stopped');
    assert.equal((await cli(['start', 'instance', String(id)])).code, 0);
    assert.equal((await sdk().instances.show(id)).intended_status, 'running');
    const d = await cli(['destroy', 'instance', String(id)]);
    assert.equal(d.code, 0, d.stderr);
    const gone = await cli(['show', 'instance', String(id)]);
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, new RegExp(`instance ${id} not found \\(HTTP 404, not_found\\)`));
  });

  test('another user cannot see or touch my instance: 404 with the server message', async () => {
    const id = await instance();
    const { api_key } = await sdk().emulator.createUser({ email: 'cli-mallory@example.com' });
    for (const args of [['show', 'instance', String(id)], ['stop', 'instance', String(id)], ['logs', String(id)]]) {
      const r = await cli(args, { GPUPLANE_API_KEY: api_key });
      assert.equal(r.code, 1, args.join(' '));
      assert.match(r.stderr, new RegExp(`instance ${id} not found \\(HTTP 404, not_found\\)`), args.join(' '));
    }
    // A destroy of what is not there answers Vast.ai's code for it (issue 29 item 2).
    const destroy = await cli(['destroy', 'instance', String(id)], { GPUPLANE_API_KEY: api_key });
    assert.equal(destroy.code, 1);
    assert.match(destroy.stderr, new RegExp(`instance ${id} not found \\(HTTP 404, no_such_instance\\)`));
  });

  test('logs, ssh-url (running), attach/detach ssh, change bid', async () => {
    const id = await instance({ price: 0.5 });
    const early = await cli(['ssh-url', String(id)]);
    assert.equal(early.code, 1, 'no SSH address before it runs');
    assert.match(early.stderr, /has no SSH address/);
    await sdk().emulator.advance(60);
    const url = await cli(['ssh-url', String(id)]);
    assert.equal(url.code, 0, url.stderr);
    assert.match(url.stdout.trim(), /^ssh:\/\/root@[\d.]+:\d+$/);
    const logs = await cli(['logs', String(id), '--tail', '2']);
    assert.equal(logs.code, 0, logs.stderr);
    assert.equal(logs.stdout.trim().split('\n').length, 2);
    assert.match(logs.stdout, /running/);

    const key = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB3ykXJ4m8zUHPKCvZzLp9d1oGm6VbV7R4d0wKp2cX9e cli@test';
    const at = await cli(['attach', 'ssh', String(id), key, '--raw']);
    assert.equal(at.code, 0, at.stderr);
    const keyId = JSON.parse(at.stdout).key_id;
    assert.equal((await cli(['detach', 'ssh', String(id), String(keyId)])).code, 0);

    const bid = await cli(['change', 'bid', String(id), '--price', '0.9']);
    assert.equal(bid.code, 0, bid.stderr);
    const bad = await cli(['change', 'bid', String(id), '--price', 'lots']);
    assert.equal(bad.code, 2);
  });
});

describe('wait instance', () => {
  test('success: exits 0 when running; the status line shows each state and the elapsed time', async () => {
    const id = await instance();
    const r = await waitWhileAdvancing(['wait', 'instance', String(id), '--timeout', '30']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^instance ${id} is running`, 'm'));
    const states = r.stderr.trim().split('\n');
    assert.match(states[0], new RegExp(`^instance ${id}: (provisioning|loading) \\(\\d+s\\)$`));
    assert.match(states.at(-1)!, new RegExp(`^instance ${id}: running \\(\\d+s\\)$`));
  });

  test('failure: an instance that exits makes the wait fail with exit 3 and the reason', async () => {
    const id = await instance();
    // The status line shows once the wait is subscribed to the server's events: then the fault reaches it.
    let watching!: () => void;
    const subscribed = new Promise<void>((resolve) => (watching = resolve));
    const waiting = cli(['wait', 'instance', String(id), '--timeout', '30'], {}, (err) => err.includes(`instance ${id}: `) && watching());
    await subscribed;
    await sdk().emulator.fault({ fault: 'exited', instance_id: id });
    const r = await waiting;
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, new RegExp(`instance ${id} is exited: it will never reach the wanted state`));
  });

  test('timeout: exits 4 naming the last state (the clock does not move)', async () => {
    const id = await instance();
    const t0 = Date.now();
    const r = await cli(['wait', 'instance', String(id), '--timeout', '1.5']);
    assert.equal(r.code, 4, r.stderr);
    assert.match(r.stderr, new RegExp(`instance ${id} did not get there within 1.5 s \\(last state: (provisioning|loading|none yet)\\)`));
    assert.ok(Date.now() - t0 < 15_000);
  });

  test('--until stopped; a missing instance is 404 (exit 1)', async () => {
    const id = await instance();
    await sdk().instances.stop(id);
    const r = await cli(['wait', 'instance', String(id), '--until', 'stopped', '--timeout', '10']);
    assert.equal(r.code, 0, r.stderr);
    const missing = await cli(['wait', 'instance', '987654', '--timeout', '5']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /not_found/);
  });
});
