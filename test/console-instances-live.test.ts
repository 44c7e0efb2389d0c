// The console's live instance list (console/src/lib/instances-live.ts): events update rows and timelines, an event
// for an unknown instance asks for the list again, the virtual window, and status words (never colour alone).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  applyEvent, initialState, replaceRow, sortedRows, statusBadge, visibleRange,
} from '../console/src/lib/instances-live.js';
import { portLines, sshCommand } from '../console/src/lib/connect.js';

const row = (id: number, actual_status: string | null = 'loading') => ({ id, actual_status, start_date: 100, status_msg: null });

test('an event updates its row and appends to its timeline once per change; an unknown id marks the list stale', () => {
  let s = initialState([row(1), row(2, 'running')]);
  assert.deepEqual(s.timelines.get(1), [{ status: 'loading', at: 100, msg: null }]);
  const before = s;
  s = applyEvent(s, { id: 1, actual_status: 'running', intended_status: 'running', status_msg: null, at: 130 });
  assert.notEqual(s, before, 'a new state object (React re-renders)');
  assert.equal(s.rows.get(1)!.actual_status, 'running');
  assert.equal(before.rows.get(1)!.actual_status, 'loading', 'the old state is not changed');
  // The same status again (a repeated frame) adds nothing; a new message does.
  s = applyEvent(s, { id: 1, actual_status: 'running', intended_status: 'running', status_msg: null, at: 140 });
  assert.equal(s.timelines.get(1)!.length, 2);
  s = applyEvent(s, { id: 1, actual_status: 'stopped', intended_status: 'stopped', status_msg: 'stopped by you', at: 200 });
  assert.deepEqual(s.timelines.get(1)!.map((t) => t.status), ['loading', 'running', 'stopped']);
  assert.equal(s.stale, false);
  s = applyEvent(s, { id: 9, actual_status: 'loading', intended_status: 'running', status_msg: null, at: 210 });
  assert.equal(s.stale, true);
  // Reading the list again keeps the timelines seen so far.
  const again = initialState([row(1, 'stopped'), row(9)], s);
  assert.equal(again.timelines.get(1)!.length, 3);
  assert.equal(again.stale, false);
});

test('a refreshed row merges in (SSH address once running); a vanished one leaves; newest first', () => {
  let s = initialState([row(1), row(3), row(2)]);
  assert.deepEqual(sortedRows(s).map((r) => r.id), [3, 2, 1]);
  s = replaceRow(s, 1, { id: 1, actual_status: 'running', ssh_host: 'ssh1.example', ssh_port: 2201, ports: { '8080/tcp': [{ HostPort: '41000' }] }, public_ipaddr: '10.0.0.1' });
  assert.equal(sshCommand(s.rows.get(1)!), 'ssh -p 2201 root@ssh1.example');
  assert.deepEqual(portLines(s.rows.get(1)!), [{ container: '8080/tcp', address: '10.0.0.1:41000' }]);
  assert.equal(sshCommand(s.rows.get(2)!), null);
  s = replaceRow(s, 3, null);
  assert.deepEqual(sortedRows(s).map((r) => r.id), [2, 1]);
});

test('the virtual window: only the rows in view, plus a margin, whatever the list\'s length', () => {
  assert.deepEqual(visibleRange(0, 500, 36, 1000), { start: 0, end: 22 });
  const mid = visibleRange(18_000, 500, 36, 1000);
  assert.ok(mid.end - mid.start < 40);
  assert.ok(mid.start <= 500 && mid.end >= 514);
  assert.deepEqual(visibleRange(1_000_000, 500, 36, 1000).end, 1000);
  assert.deepEqual(visibleRange(0, 500, 36, 3), { start: 0, end: 3 });
});

test('every status shows its word; failure states are marked as such', () => {
  for (const s of ['running', 'loading', 'exited', 'stopped', 'offline']) assert.equal(statusBadge(s).text, s);
  assert.equal(statusBadge('exited').kind, 'bad');
  // The spec's null state is "being provisioned": a person reads `provisioning`, never `none` (issue 29 item 9).
  assert.deepEqual(statusBadge(null), { text: 'provisioning', kind: 'warn' });
  assert.deepEqual(statusBadge(undefined), { text: 'provisioning', kind: 'warn' });
});

test('a provisioning step in a timeline reads provisioning, from live events and from the history', async () => {
  const { withHistory } = await import('../console/src/lib/instances-live.js');
  let s = initialState([row(1, 'loading')]);
  s = applyEvent(s, { id: 1, actual_status: null, intended_status: 'running', status_msg: null, at: 50 });
  assert.equal(s.timelines.get(1)!.at(-1)!.status, 'provisioning');
  s = withHistory(s, 1, [{ id: 1, actual_status: null, intended_status: 'running', status_msg: null, at: 10 }]);
  assert.equal(s.timelines.get(1)![0].status, 'provisioning');
});

test('counts name one thing in the singular and others in the plural', async () => {
  const { counted } = await import('../console/src/lib/format.js');
  assert.equal(counted(1, 'instance'), '1 instance');
  assert.equal(counted(0, 'instance'), '0 instances');
  assert.equal(counted(2, 'instance'), '2 instances');
  assert.equal(counted(3, 'entry', 'entries'), '3 entries');
});

test('the history gives the whole timeline; live events newer than it stay after it', async () => {
  const { withHistory } = await import('../console/src/lib/instances-live.js');
  let s = initialState([row(1, 'running')]);
  s = applyEvent(s, { id: 1, actual_status: 'stopped', intended_status: 'stopped', status_msg: null, at: 300 });
  s = withHistory(s, 1, [
    { id: 1, actual_status: 'loading', intended_status: 'running', status_msg: null, at: 100 },
    { id: 1, actual_status: 'loading', intended_status: 'running', status_msg: null, at: 101 },
    { id: 1, actual_status: 'running', intended_status: 'running', status_msg: null, at: 120 },
  ]);
  assert.deepEqual(s.timelines.get(1)!.map((t) => [t.status, t.at]), [['loading', 100], ['running', 120], ['stopped', 300]]);
});
