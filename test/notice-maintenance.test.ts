// A host's maintenance window stops its machine's instances with notice (issue 33 item 3), on both databases, on a
// real host's machine driven through the agent protocol: when the window begins, a running instance is stopped as an
// outbid one is (intended_status running, compute billing stopped, GPUs kept) and told why and when in status_msg,
// its event, and the desired state the agent acts on (stop_reason, stop_grace_s: SIGTERM, then SIGKILL after the
// grace; notice-docker.test.ts runs that on Docker); when the window ends, or is cancelled, it boots again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { desired, hostWithMachine, observed, report, type Host } from './agent-server-fixtures.js';
import { rentOk, statusOf } from './instances-fixtures.js';
import type { TestApp } from './helpers/harness.js';
import { MAINT_RESUMED_MSG } from '../src/instances/instances-maintenance.js';

const GRACE = 20;
const iso = (t: number) => new Date(Math.floor(t) * 1000).toISOString().replace('.000Z', 'Z');

async function running(app: TestApp, host: Host, key: string) {
  const { id } = await rentOk(app, host.machineId * 100 + 1, { image: 'busybox' }, key);
  const d = await desired(app, host);
  // Every instance of the machine running, as its agent would say.
  await report(app, host, d.instances.map((i: { instance_id: number; boot: number }) => observed(i.instance_id, i.boot)), d.version);
  assert.equal((await statusOf(app, id, key)).actual_status, 'running');
  return id;
}

const schedule = (app: TestApp, host: Host, sdate: number, duration: number) =>
  app.request('PUT', `/api/v0/machines/${host.machineId}/dnotify/`, { key: host.apiKey, body: { client_id: 'me', sdate, duration, maintenance_category: 'power' } });

forEachDialect('notice before a stop: a host\'s maintenance window', (app) => {
  test('the window\'s start stops the instance with notice (why, when, the grace) and hands the agent the same; its end boots it again', async () => {
    const host = await hostWithMachine(app());
    const renter = await app().createUser();
    const id = await running(app(), host, renter.api_key);
    const other = await app().createUser();
    const otherId = await running(app(), host, other.api_key);
    const start = Math.floor(app().clock.now()) + 600;
    assert.equal((await schedule(app(), host, start, 1)).status, 200);
    assert.equal((await statusOf(app(), id, renter.api_key)).actual_status, 'running', 'nothing stops before the window');

    await app().advance(600);
    const why = `host maintenance from ${iso(start)} for 1 hours (power); it starts again when the window ends`;
    const notice = `${why}; stopping at ${iso(start)}: SIGTERM now, SIGKILL after ${GRACE} s`;
    const inst = await statusOf(app(), id, renter.api_key);
    assert.deepEqual([inst.actual_status, inst.intended_status], ['stopped', 'running']);
    // The view adds the window under way, after the notice.
    assert.equal(inst.status_msg, `${notice}; host maintenance under way since ${iso(start)} for 1 hours (power)`);
    const events = await app().request('GET', '/api/v0/instances/events/?since=0&timeout=0.5', { key: renter.api_key });
    assert.ok(events.raw.includes(JSON.stringify(notice)), 'the event stream says it');
    const d = (await desired(app(), host)).instances.find((i: { instance_id: number }) => i.instance_id === id);
    assert.deepEqual([d.state, d.stop_reason, d.stop_grace_s], ['stopped', notice, GRACE]);
    assert.deepEqual(d.gpu_indices, [0], 'its GPU is kept for it');
    // Another instance's GPU freed during the window (a destroy looks for instances waiting on GPUs) starts nothing early.
    const gone = await app().request('DELETE', `/api/v0/instances/${otherId}/`, { key: other.api_key });
    assert.equal(gone.status, 200, gone.raw);
    assert.equal((await statusOf(app(), id, renter.api_key)).actual_status, 'stopped');

    await app().advance(3600);
    const back = await statusOf(app(), id, renter.api_key);
    assert.deepEqual([back.actual_status, back.intended_status, back.status_msg], [null, 'running', MAINT_RESUMED_MSG]);
    const again = (await desired(app(), host)).instances.find((i: { instance_id: number }) => i.instance_id === id);
    assert.deepEqual([again.state, again.stop_reason], ['running', undefined]);
  });

  test('cancelling the window under way starts the instance again at once; a cancelled window to come stops nothing', async () => {
    const host = await hostWithMachine(app());
    const renter = await app().createUser();
    const id = await running(app(), host, renter.api_key);
    const start = Math.floor(app().clock.now()) + 60;
    assert.equal((await schedule(app(), host, start, 2)).status, 200);
    await app().advance(61);
    assert.equal((await statusOf(app(), id, renter.api_key)).actual_status, 'stopped');
    const cancel = await app().request('PUT', `/api/v0/machines/${host.machineId}/cancel_maint/`, { key: host.apiKey, body: { client_id: 'me', machine_id: host.machineId } });
    assert.equal(cancel.status, 200, cancel.raw);
    assert.deepEqual([(await statusOf(app(), id, renter.api_key)).actual_status, (await statusOf(app(), id, renter.api_key)).status_msg], [null, MAINT_RESUMED_MSG]);
    const d = await desired(app(), host);
    await report(app(), host, [observed(id, d.instances[0].boot)], d.version);
    assert.equal((await statusOf(app(), id, renter.api_key)).actual_status, 'running');
    // A window to come, cancelled before it starts: nothing happens at its time.
    const later = Math.floor(app().clock.now()) + 300;
    assert.equal((await schedule(app(), host, later, 1)).status, 200);
    assert.equal((await app().request('PUT', `/api/v0/machines/${host.machineId}/cancel_maint/`, { key: host.apiKey, body: { client_id: 'me', machine_id: host.machineId } })).status, 200);
    await app().advance(400);
    assert.equal((await statusOf(app(), id, renter.api_key)).actual_status, 'running');
  });
  // The agent is not heartbeating while the clock jumps: its machine must not go offline meanwhile.
}, { config: { GPUPLANE_STOP_GRACE_SECONDS: String(GRACE), GPUPLANE_AGENT_OFFLINE_AFTER: '86400' } });
