// A stop while the instance's host is not heard (issue 29 item 11; spec: States and transitions): compute billing
// stops at once, but the container runs on until the host is back, so the instance does not claim `stopped`:
// intended_status and next_state say stopped, actual_status stays as last observed, status_msg says the stop waits for
// the host. The host's first report once back (a simulated host's agent, or a real agent's status report) that shows
// the container not running makes it `stopped`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { addMachine, BOOT_MAX_S, offerFor, parked, rentOk, statusOf } from './instances-fixtures.js';
import { desired, hostWithMachine, observed, report } from './agent-server-fixtures.js';
import { balance } from './deposits-fixtures.js';
import { HEARTBEAT_OFFLINE_AFTER_S, STOP_PENDING_MSG } from '../src/instances/instances-lifecycle.js';

const fault = (app: TestApp, body: Record<string, unknown>) => app.request('POST', '/_emu/faults', { body });
const stop = (app: TestApp, id: number, key?: string) => app.request('PUT', `/api/v0/instances/${id}/`, { key, body: { state: 'stopped' } });
const containerStates = async (app: TestApp, machineId: number, id: number) =>
  (await app.services.simhost!.containers(machineId)).filter((c) => c.instance_id === id).map((c) => c.status);

/** What a client polling the instance reads of its state. */
const stateOf = async (app: TestApp, id: number, key?: string) => {
  const i = await statusOf(app, id, key);
  return { actual_status: i.actual_status, intended_status: i.intended_status, cur_state: i.cur_state, next_state: i.next_state, status_msg: i.status_msg };
};

forEachDialect('a stop while the host is not heard', (app) => {
  test('host offline: the stop is pending on the host (billing stopped, container running) until the host is back', async () => {
    const { api_key } = await app().createUser({ credit: 100 });
    const m = await addMachine(app(), { num_gpus: 1 });
    const { id } = await rentOk(app(), offerFor(m, 1), {}, api_key);
    await app().advance(BOOT_MAX_S);
    assert.equal((await fault(app(), { fault: 'offline', machine_id: m.machine_id })).status, 200);
    assert.equal((await statusOf(app(), id, api_key)).actual_status, 'offline');

    const res = await stop(app(), id, api_key);
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(await stateOf(app(), id, api_key), {
      actual_status: 'offline', intended_status: 'stopped', cur_state: 'stopped', next_state: 'stopped', status_msg: STOP_PENDING_MSG,
    });
    assert.deepEqual(await containerStates(app(), m.machine_id, id), ['running'], 'the silent host has not stopped it');
    // A second stop changes nothing; compute is not charged meanwhile (an hour of the GPU would be $0.50).
    assert.equal((await stop(app(), id, api_key)).status, 200);
    const before = await balance(app(), api_key);
    await app().advance(3600);
    assert.ok(before - (await balance(app(), api_key)) < 10_000, 'only the disk accrues');
    assert.equal((await statusOf(app(), id, api_key)).status_msg, STOP_PENDING_MSG);

    // A wait for `stopped` is not refused as for an offline instance: it answers when the host has stopped it.
    const waited = app().request('GET', `/api/v0/instances/${id}/wait/?until=stopped&timeout=600`, { key: api_key });
    await Promise.race([parked(app()), waited.then((r) => assert.fail(`the wait answered while the host was away: ${r.status} ${r.raw}`))]);
    // The host is back: its agent stops the container, and its report makes the instance stopped.
    assert.equal((await fault(app(), { fault: 'recover', machine_id: m.machine_id })).status, 200);
    assert.deepEqual(await containerStates(app(), m.machine_id, id), ['exited']);
    const w = await waited;
    assert.equal(w.status, 200, w.raw);
    assert.equal(w.body.actual_status, 'stopped');
    assert.deepEqual(await stateOf(app(), id, api_key), {
      actual_status: 'stopped', intended_status: 'stopped', cur_state: 'stopped', next_state: 'stopped', status_msg: null,
    });
    // And it starts again as any stopped instance does.
    assert.equal((await app().request('PUT', `/api/v0/instances/${id}/`, { key: api_key, body: { state: 'running' } })).status, 200);
    await app().advance(BOOT_MAX_S);
    assert.equal((await statusOf(app(), id, api_key)).actual_status, 'running');
  });

  test('no heartbeat (unknown): the stop stays pending past the offline timeout; start is refused until the host is back', async () => {
    const m = await addMachine(app(), { num_gpus: 1 });
    const { id } = await rentOk(app(), offerFor(m, 1));
    await app().advance(BOOT_MAX_S);
    assert.equal((await fault(app(), { fault: 'unknown', instance_id: id })).status, 200);
    assert.equal((await stop(app(), id)).status, 200);
    await app().advance(HEARTBEAT_OFFLINE_AFTER_S + 1);
    const pending = await stateOf(app(), id);
    assert.equal(pending.actual_status, 'unknown');
    assert.equal(pending.intended_status, 'stopped');
    assert.equal(pending.status_msg, STOP_PENDING_MSG);
    const start = await app().request('PUT', `/api/v0/instances/${id}/`, { body: { state: 'running' } });
    assert.equal(start.status, 409, start.raw);

    assert.equal((await fault(app(), { fault: 'recover', instance_id: id })).status, 200);
    assert.equal((await stateOf(app(), id)).actual_status, 'stopped');
    assert.deepEqual(await containerStates(app(), m.machine_id, id), ['exited']);
  });

  test('a real host offline: its agent\'s report once back confirms the stop only when it acted on it and the container is not running', async () => {
    const host = await hostWithMachine(app());
    const renter = await app().createUser();
    const { id } = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox' }, renter.api_key);
    const d = await desired(app(), host);
    const boot = d.instances[0].boot;
    await report(app(), host, [observed(id, boot)], d.version);
    assert.equal((await statusOf(app(), id, renter.api_key)).actual_status, 'running');
    await app().advance(31);
    assert.equal((await statusOf(app(), id, renter.api_key)).actual_status, 'offline');

    assert.equal((await stop(app(), id, renter.api_key)).status, 200);
    assert.equal((await statusOf(app(), id, renter.api_key)).status_msg, STOP_PENDING_MSG);
    // Back, but reporting against the desired state from before the stop: the container it still runs says nothing.
    await report(app(), host, [observed(id, boot)], d.version);
    let now = await stateOf(app(), id, renter.api_key);
    assert.equal(now.intended_status, 'stopped');
    assert.notEqual(now.actual_status, 'stopped');
    // It reads the new desired state (the container should not run), stops it and says so.
    const after = await desired(app(), host);
    assert.equal(after.instances[0].state, 'stopped');
    await report(app(), host, [observed(id, boot, { state: 'stopped', exit_code: 0, ports: {} })], after.version);
    now = await stateOf(app(), id, renter.api_key);
    assert.deepEqual([now.actual_status, now.intended_status, now.status_msg], ['stopped', 'stopped', null]);
  });
});
