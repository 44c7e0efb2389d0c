// The console's terminal end to end (issue 32 item 3): `gpuplane serve` and `gpuplane agent` as real processes, a
// busybox instance in Docker, and the `ws` client through GET /api/v0/instances/{id}/terminal/ and the agent's
// tunnel: a login shell (TERM=xterm-256color), `echo` comes back, a resize then `stty size` shows the new size, `exit 5`
// closes the WebSocket with 1000 and "exit status 5", the session is in the renter's audit log; stopping the instance
// closes an open terminal (4409) within seconds, and so does destroying it (4404). Docker must be there: without it
// this test fails.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTerminalHost, type TerminalHost } from './helpers/terminal-host.js';
import { openTerminal, type Attempt, type Opened } from './terminal-fixtures.js';
import { TERMINAL_CLOSE } from '../src/terminal/terminal-contract.js';
import { untilStatus, within } from './helpers/agent-process.js';

let h: TerminalHost;

before(async () => {
  h = await startTerminalHost({ ports: { start: 47700, end: 47799 }, idBase: 600_000_000 });
});
after(async () => {
  await h?.stop();
});

function opened(a: Attempt): Opened {
  if (!a.ok) assert.fail(`refused: ${a.status} ${JSON.stringify(a.body)}\n${h.output()}`);
  return a.t;
}

test('a shell in the container: echo, resize then stty size, TERM, exit closes 1000 with the status; audited', async () => {
  const t = opened(await openTerminal(h.url, h.instanceId, { authorization: `Bearer ${h.renter.key}` }));
  t.resize(30, 100);
  t.input('echo "hello-$((6*7))"; echo "term=$TERM"\r');
  await t.until(/hello-42/);
  await t.until(/term=xterm-256color/);
  t.resize(41, 133);
  t.input('stty size\r');
  await t.until(/41 133/);
  t.input('exit 5\r');
  const closed = await within('the close', t.closed, h.output, 15_000);
  assert.deepEqual(closed, { code: 1000, reason: 'exit status 5' });
  const deadline = Date.now() + 15_000;
  let records: Record<string, any>[] = [];
  while (Date.now() < deadline) {
    const log = await h.api('GET', '/api/v0/audit_logs/', undefined, h.renter.key);
    records = (log.body as Record<string, any>[]).filter((e) => e.action === 'instance.terminal_session' && e.args.params.instance_id === h.instanceId);
    if (records.length) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.equal(records.length, 1, h.output());
  const p = records[0].args.params;
  assert.equal(p.outcome, 'connected');
  assert.equal(p.exit, '5');
  assert.ok(p.bytes_in > 0 && p.bytes_out > 0, JSON.stringify(p));
  assert.doesNotMatch(JSON.stringify(records[0]), /hello-/);
});

test('the instance stopping closes an open terminal (4409) within seconds; destroying one closes it (4404)', async () => {
  const t = opened(await openTerminal(h.url, h.instanceId, { authorization: `Bearer ${h.renter.key}` }));
  t.input('echo ready\r');
  await t.until(/ready/);
  const stopped = Date.now();
  const stop = await h.api('PUT', `/api/v0/instances/${h.instanceId}/`, { state: 'stopped' }, h.renter.key);
  assert.equal(stop.status, 200, JSON.stringify(stop.body));
  const c = await within('the close on stop', t.closed, h.output, 60_000);
  assert.equal(c.code, TERMINAL_CLOSE.stopped, JSON.stringify(c));
  assert.match(c.reason, new RegExp(`instance ${h.instanceId} stopped`));
  const took = Date.now() - stopped;
  await within('stopped', untilStatus(h.url, h.renter.key, h.instanceId, 'stopped'), h.output, 60_000);
  // A stopped instance's terminal is refused before the upgrade.
  const refused = await openTerminal(h.url, h.instanceId, { authorization: `Bearer ${h.renter.key}` });
  assert.ok(!refused.ok && refused.status === 409, JSON.stringify(refused.ok ? 'opened' : refused.body));
  process.stdout.write(`# closed ${took} ms after the stop request\n`);

  const id = await h.rentRunning();
  const t2 = opened(await openTerminal(h.url, id, { authorization: `Bearer ${h.renter.key}` }));
  t2.input('echo second\r');
  await t2.until(/second/);
  assert.equal((await h.api('DELETE', `/api/v0/instances/${id}/`, undefined, h.renter.key)).status, 200);
  assert.deepEqual(await within('the close on destroy', t2.closed, h.output, 30_000), { code: TERMINAL_CLOSE.destroyed, reason: `instance ${id} was destroyed` });
});
