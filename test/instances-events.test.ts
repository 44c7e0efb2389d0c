// No polling needed: the SSE stream of instance state changes and the wait route (issue 3 §4).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { addMachine, BOOT_MAX_S, offerFor, parked, rentOk } from './instances-fixtures.js';

function parseSse(text: string): { id: number; event: string; data: any }[] {
  return text
    .split('\n\n')
    .map((block) => {
      const f: Record<string, string> = {};
      for (const line of block.split('\n')) {
        const m = /^(id|event|data): (.*)$/.exec(line);
        if (m) f[m[1]] = m[2];
      }
      return f;
    })
    .filter((f) => f.event)
    .map((f) => ({ id: Number(f.id), event: f.event, data: JSON.parse(f.data) }));
}

forEachDialect('instances: events and wait', (app) => {
  test('SSE: live changes made by a request and by the scheduler arrive as `event: instance` frames, in order', async () => {
    const { api_key } = await app().createUser();
    const m = await addMachine(app());
    const stream = app().request('GET', '/api/v0/instances/events/?max_events=3&timeout=20', { key: api_key });
    await parked(app());
    const { id } = await rentOk(app(), offerFor(m, 1), {}, api_key);
    await app().advance(BOOT_MAX_S);
    const res = await stream;
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /^text\/event-stream/);
    const events = parseSse(res.raw);
    assert.deepEqual(events.map((e) => [e.data.id, e.data.actual_status]), [[id, null], [id, 'loading'], [id, 'running']]);
    assert.ok(events.every((e) => e.event === 'instance'));
    assert.ok(events[0].id < events[1].id && events[1].id < events[2].id);
  });

  test('SSE: since / Last-Event-ID replay; another user\'s changes are never sent', async () => {
    const a = await app().createUser();
    const b = await app().createUser();
    const m = await addMachine(app(), { num_gpus: 2 });
    const ia = await rentOk(app(), offerFor(m, 1), {}, a.api_key);
    await rentOk(app(), offerFor(m, 1), {}, b.api_key);
    await app().advance(BOOT_MAX_S);
    const all = parseSse((await app().request('GET', '/api/v0/instances/events/?since=0&timeout=0.5', { key: a.api_key })).raw);
    assert.deepEqual(all.map((e) => e.data.actual_status), [null, 'loading', 'running']);
    assert.ok(all.every((e) => e.data.id === ia.id));
    const resumed = await app().request('GET', '/api/v0/instances/events/?timeout=0.5', { key: a.api_key, headers: { 'last-event-id': String(all[0].id) } });
    assert.deepEqual(parseSse(resumed.raw).map((e) => e.data.actual_status), ['loading', 'running']);
  });

  test('wait: answers 200 once the virtual clock moves the instance to running', async () => {
    const m = await addMachine(app());
    const { id } = await rentOk(app(), offerFor(m, 1));
    const waiting = app().request('GET', `/api/v0/instances/${id}/wait/?until=running&timeout=20`);
    await parked(app());
    await app().advance(BOOT_MAX_S);
    const res = await waiting;
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body, { success: true, id, actual_status: 'running' });
  });

  test('wait: 409 instance_failed when the instance lands in exited; 408 wait_timeout when time runs out', async () => {
    const m = await addMachine(app());
    const { id } = await rentOk(app(), offerFor(m, 1));
    const waiting = app().request('GET', `/api/v0/instances/${id}/wait/?until=running&timeout=20`);
    await parked(app());
    await app().request('POST', '/_emu/faults', { body: { fault: 'exited', instance_id: id } });
    const res = await waiting;
    assert.equal(res.status, 409, res.raw);
    assert.equal(res.body.error, 'instance_failed');
    assert.equal(res.body.actual_status, 'exited');
    const other = await rentOk(app(), offerFor(m, 1));
    const slow = await app().request('GET', `/api/v0/instances/${other.id}/wait/?until=running&timeout=0.3`);
    assert.equal(slow.status, 408, slow.raw);
    assert.equal(slow.body.error, 'wait_timeout');
    const stopped = await app().request('GET', `/api/v0/instances/${other.id}/wait/?until=stopped&timeout=5`);
    assert.equal(stopped.status, 408);
  });

  test('wait: someone else\'s instance is 404; a bad until or timeout is 400', async () => {
    const m = await addMachine(app());
    const { id } = await rentOk(app(), offerFor(m, 1));
    const { api_key } = await app().createUser();
    assert.equal((await app().request('GET', `/api/v0/instances/${id}/wait/?timeout=1`, { key: api_key })).status, 404);
    assert.equal((await app().request('GET', `/api/v0/instances/${id}/wait/?until=flying`)).status, 400);
    assert.equal((await app().request('GET', `/api/v0/instances/${id}/wait/?timeout=-1`)).status, 400);
    assert.equal((await app().request('GET', `/api/v0/instances/${id}/wait/?timeout=100000`)).status, 400);
  });
});
