// Issue 34 item 3: `gpuplane emu event add|list|clear` against a real server (virtual clock): an outbid wave scripted
// at +60 s strikes the bid instance on its machine when `emu advance` passes it; list shows it; clear removes events.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OWNER_KEY, useServer } from './cli-helpers.js';
import { createClient } from '../src/sdk/index.js';

const server = useServer();

test('an outbid wave at +60 s: add, list, advance past it, the bid is outbid; clear one, clear all', async () => {
  const sdk = createClient({ url: server.url(), apiKey: OWNER_KEY });
  const m = await sdk.emulator.addMachine({ num_gpus: 1, price_gpu: 0.5, min_bid: 0.2 });
  const { new_contract: id } = await sdk.instances.create(m.offer_ids[0], { image: 'alpine', price: 0.3 });
  await sdk.emulator.advance(30);

  const add = await server.cli(['emu', 'event', 'add', 'outbid_wave', '--after', '60', '--machine-ids', String(m.machine_id)]);
  assert.equal(add.code, 0, add.stderr);
  const ev = Number(new RegExp(`^event (\\d+): outbid_wave pending, machines ${m.machine_id}$`, 'm').exec(add.stdout)?.[1]);
  assert.ok(ev > 0, add.stdout);

  const list = await server.cli(['emu', 'event', 'list']);
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, new RegExp(`^\\s*${ev}\\s+outbid_wave\\s+pending\\s`, 'm'));

  assert.equal((await server.cli(['emu', 'advance', '61'])).code, 0);
  const inst = await sdk.instances.show(id);
  assert.equal(inst.actual_status, 'stopped');
  assert.match(String(inst.status_msg), /outbid/);
  const raw = await server.cli(['emu', 'event', 'list', '--raw']);
  const [listed] = JSON.parse(raw.stdout).filter((e: { id: number }) => e.id === ev);
  assert.equal(listed.state, 'done');
  assert.deepEqual(listed.instance_ids, [id]);

  const one = await server.cli(['emu', 'event', 'clear', String(ev)]);
  assert.equal(one.code, 0, one.stderr);
  assert.equal(one.stdout.trim(), `cleared host event ${ev} (outbid_wave)`);
  const again = await server.cli(['emu', 'event', 'clear', String(ev)]);
  assert.equal(again.code, 1);
  assert.match(again.stderr, /not found/);

  for (const args of [['host_offline', '--fraction', '0.5', '--seed', '3', '--after', '600'], ['slow_pull', '--machines', '2', '--pull-seconds', '120', '--duration', '900']]) {
    const r = await server.cli(['emu', 'event', 'add', ...args]);
    assert.equal(r.code, 0, r.stderr);
  }
  const all = await server.cli(['emu', 'event', 'clear']);
  assert.equal(all.code, 0, all.stderr);
  assert.equal(all.stdout.trim(), 'cleared 2 host events');
  assert.equal((await server.cli(['emu', 'event', 'list'])).stdout.trim(), 'no host events');
});

test('bad input: a wrong kind is a usage error (exit 2); the server names a bad field (exit 1)', async () => {
  const kind = await server.cli(['emu', 'event', 'add', 'meteor']);
  assert.equal(kind.code, 2);
  assert.match(kind.stderr, /outbid_wave/);
  const bad = await server.cli(['emu', 'event', 'add', 'outbid_wave', '--pull-seconds', '5']);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /pull_seconds: only for kind slow_pull/);
});
