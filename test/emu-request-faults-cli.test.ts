// Issue 34 item 3: `gpuplane emu request-fault add|list|clear` against a real server, and a client that retries on 429
// (gpuplane's own, after Retry-After) recovering from a scripted 429.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer } from './cli-helpers.js';

const server = useServer();

test('add a 429 rule, see a search recover after two 429s, list its counters, clear it', async () => {
  const add = await server.cli(['emu', 'request-fault', 'add', '--route', '/api/v0/bundles/', '--method', 'POST', '--status', '429', '--retry-after', '1', '--count', '2']);
  assert.equal(add.code, 0, add.stderr);
  const id = Number(/^request fault (\d+): 429 \(Retry-After 1\)$/m.exec(add.stdout)?.[1]);
  assert.ok(id > 0, add.stdout);

  const start = performance.now();
  const search = await server.cli(['search', 'offers', 'num_gpus=1', '--limit', '2', '--raw']);
  assert.equal(search.code, 0, search.stderr);
  assert.equal(JSON.parse(search.stdout).length, 2);
  // Two Retry-After waits of 1 s each (and their jitter).
  assert.ok(performance.now() - start >= 2000, `took ${performance.now() - start} ms`);

  const list = await server.cli(['emu', 'request-fault', 'list']);
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, new RegExp(`^\\s*${id}\\s+POST\\s+/api/v0/bundles/\\s+-\\s+1\\s+429 \\(Retry-After 1\\)\\s+0\\s+2\\s+-\\s+2\\s+2\\s*$`, 'm'));
  const raw = await server.cli(['emu', 'request-fault', 'list', '--raw']);
  assert.deepEqual(JSON.parse(raw.stdout).map((f: { id: number; fired: number; matched: number }) => [f.id, f.matched, f.fired]), [[id, 2, 2]]);

  const one = await server.cli(['emu', 'request-fault', 'clear', String(id)]);
  assert.equal(one.code, 0, one.stderr);
  assert.equal(one.stdout.trim(), `removed request fault ${id}`);
  const again = await server.cli(['emu', 'request-fault', 'clear', String(id)]);
  assert.equal(again.code, 1);
  assert.match(again.stderr, /not found/);
});

test('a category rule with a probability and a seed, a latency rule, then clear every rule', async () => {
  const a = await server.cli(['emu', 'request-fault', 'add', '--category', 'instance_write', '--status', '503', '--probability', '0.5', '--seed', '7']);
  assert.equal(a.code, 0, a.stderr);
  assert.match(a.stdout, /^request fault \d+: 503$/m);
  const b = await server.cli(['emu', 'request-fault', 'add', '--route', '/api/v0/instances/*', '--latency-ms', '50']);
  assert.equal(b.code, 0, b.stderr);
  assert.match(b.stdout, /^request fault \d+: latency$/m);
  const t = await server.cli(['emu', 'request-fault', 'add', '--route', '/api/v0/instances/{id}/', '--method', 'PUT', '--timeout', '--latency-ms', '100']);
  assert.equal(t.code, 0, t.stderr);
  assert.match(t.stdout, /^request fault \d+: timeout$/m);
  const clear = await server.cli(['emu', 'request-fault', 'clear']);
  assert.equal(clear.code, 0, clear.stderr);
  assert.equal(clear.stdout.trim(), 'removed 3 request faults');
  const list = await server.cli(['emu', 'request-fault', 'list']);
  assert.equal(list.stdout.trim(), 'no request faults');
});

test('bad input: the server names the field (exit 1); a bad number is refused before sending (exit 2)', async () => {
  const bad = await server.cli(['emu', 'request-fault', 'add', '--category', 'nope']);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /category: unknown permission category "nope"/);
  const none = await server.cli(['emu', 'request-fault', 'add']);
  assert.equal(none.code, 1);
  assert.match(none.stderr, /route: name a route, a category or a method/);
  const nan = await server.cli(['emu', 'request-fault', 'add', '--route', '*', '--latency-ms', 'soon']);
  assert.equal(nan.code, 2);
  assert.match(nan.stderr, /--latency-ms must be a whole number/);
});
