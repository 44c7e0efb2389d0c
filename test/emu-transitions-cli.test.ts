// Issue 34 item 4: `gpuplane emu transitions set|list|clear` and `gpuplane emu advance-instance` against a real server
// (virtual clock): a manual rule holds a new instance until it is advanced, step by step.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { instanceSteps, useServer } from './cli-helpers.js';

const server = useServer();
const steps = instanceSteps(server);

test('manual for every instance, an instance advanced step by step, listed, then cleared', async () => {
  const set = await server.cli(['emu', 'transitions', 'set', 'manual']);
  assert.equal(set.code, 0, set.stderr);
  assert.match(set.stdout, /^instances: manual$/m);
  const one = await server.cli(['emu', 'transitions', 'set', 'delay', '--seconds', '30', '--instance', '999999']);
  assert.equal(one.code, 1);
  assert.match(one.stderr, /instance 999999 not found/);

  const id = await steps.instance();
  const loading = await server.cli(['emu', 'advance-instance', String(id)]);
  assert.equal(loading.code, 0, loading.stderr);
  assert.equal(loading.stdout.trim(), `instance ${id}: loading`);
  const running = await server.cli(['emu', 'advance-instance', String(id)]);
  assert.equal(running.stdout.trim(), `instance ${id}: running`);
  const again = await server.cli(['emu', 'advance-instance', String(id)]);
  assert.equal(again.code, 1);
  assert.match(again.stderr, new RegExp(`nothing is pending for instance ${id}: it is running`));

  const own = await server.cli(['emu', 'transitions', 'set', 'delay', '--seconds', '30', '--instance', String(id)]);
  assert.equal(own.code, 0, own.stderr);
  assert.match(own.stdout, new RegExp(`^instance ${id}: delay 30 s$`, 'm'));
  const list = await server.cli(['emu', 'transitions', 'list']);
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /^\s*instance\s+-\s+manual\s+-\s/m);
  assert.match(list.stdout, new RegExp(`^\\s*instance\\s+${id}\\s+delay\\s+30\\s`, 'm'));
  assert.match(list.stdout, /^default: the seeded boot time, \d+-\d+ s$/m);
  const raw = await server.cli(['emu', 'transitions', 'list', '--raw']);
  assert.deepEqual(JSON.parse(raw.stdout).transitions.map((t: { instance_id: number | null; mode: string }) => [t.instance_id, t.mode]), [[null, 'manual'], [id, 'delay']]);

  const clearOne = await server.cli(['emu', 'transitions', 'clear', '--instance', String(id)]);
  assert.equal(clearOne.stdout.trim(), 'removed 1 transition rule');
  const clear = await server.cli(['emu', 'transitions', 'clear']);
  assert.equal(clear.stdout.trim(), 'removed 1 transition rule');
  const empty = await server.cli(['emu', 'transitions', 'list']);
  assert.match(empty.stdout, /^no transition rules$/m);
});

test('bad input: the server names the field (exit 1); an unknown mode is refused before sending (exit 2)', async () => {
  const noSeconds = await server.cli(['emu', 'transitions', 'set', 'delay']);
  assert.equal(noSeconds.code, 1);
  assert.match(noSeconds.stderr, /seconds: mode delay needs seconds/);
  const mode = await server.cli(['emu', 'transitions', 'set', 'sometimes']);
  assert.equal(mode.code, 2);
  assert.match(mode.stderr, /sometimes/);
});
