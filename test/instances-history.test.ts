// `GET /api/v0/instances/{id}/history/` (the web console's status timeline, issue 15): an instance's state changes
// from its creation, oldest first, as the event stream's frames; only the owner sees them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { addMachine, BOOT_MAX_S, offerFor, rentOk } from './instances-fixtures.js';

forEachDialect('instance history', (app) => {
  test('boot, stop and start appear in order, with the event stream\'s fields; another user gets 404', async () => {
    const { api_key: key } = await app().createUser();
    const m = await addMachine(app());
    const { id } = await rentOk(app(), offerFor(m, 1), {}, key);
    await app().advance(BOOT_MAX_S);
    assert.equal((await app().request('PUT', `/api/v0/instances/${id}/`, { key, body: { state: 'stopped' } })).status, 200);
    await app().advance(5);
    assert.equal((await app().request('PUT', `/api/v0/instances/${id}/`, { key, body: { state: 'running' } })).status, 200);
    await app().advance(BOOT_MAX_S);
    const h = await app().request('GET', `/api/v0/instances/${id}/history/`, { key });
    assert.equal(h.status, 200, h.raw);
    assert.equal(h.body.success, true);
    const statuses = h.body.events.map((e: any) => e.actual_status);
    const firstRun = statuses.indexOf('running');
    assert.ok(firstRun > 0, `a state before running: ${statuses}`);
    const stop = statuses.indexOf('stopped', firstRun);
    assert.ok(stop > firstRun, `stopped after running: ${statuses}`);
    assert.equal(statuses.at(-1), 'running', `running again at the end: ${statuses}`);
    for (const e of h.body.events) {
      assert.deepEqual(Object.keys(e).sort(), ['actual_status', 'at', 'id', 'intended_status', 'status_msg']);
      assert.equal(e.id, id);
    }
    const times = h.body.events.map((e: any) => e.at);
    assert.deepEqual(times, [...times].sort((a: number, b: number) => a - b));

    const other = await app().createUser();
    const theirs = await app().request('GET', `/api/v0/instances/${id}/history/`, { key: other.api_key });
    assert.equal(theirs.status, 404);
    assert.equal(theirs.body.error, 'not_found');
    assert.equal((await app().request('GET', `/api/v0/instances/${id}/history/`, { key: null })).status, 401);
  });
});
