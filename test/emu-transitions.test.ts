// Transitions under control (issue 34 item 4, src/emulator/emu-transitions/): rules that time the simulated hosts'
// work for an instance, per kind or per instance: immediate (running at the host's first pass, never loading), delay N
// (running N seconds of service time after the change, whether the image is on the machine or not), manual (loading
// until advanced, however far the clock goes), default (the seeded timing). Advancing an instance moves it one state
// now; nothing pending is a 409. And the slow-pull window the host events open (transitions-contract.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { addMachine, BOOT_MAX_S, offerFor, rentOk, statusOf } from './instances-fixtures.js';
import { PROVISION_DELAY_S } from '../src/instances/instances-lifecycle.js';
import { bootSeconds } from '../src/emulator/simulated-hosts/simhost-runtime.js';
import { endSlowPull, slowPull } from '../src/emulator/emu-transitions/transitions-contract.js';

const setRule = (app: TestApp, body: Record<string, unknown>) => app.request('PUT', '/_emu/transitions', { body });
const advanceInstance = (app: TestApp, id: number) => app.request('POST', `/_emu/instances/${id}/advance`);
const status = async (app: TestApp, id: number) => (await statusOf(app, id)).actual_status as string | null;

async function events(app: TestApp, id: number, t0: number): Promise<[string | null, number][]> {
  const rows = await app.store.db.selectFrom('instance_events').select(['actual_status', 'at']).where('instance_id', '=', id).orderBy('id').execute();
  return rows.map((r) => [r.actual_status, Number(r.at) - t0]);
}

async function fresh(app: TestApp): Promise<void> {
  assert.equal((await app.request('DELETE', '/_emu/transitions')).status, 200);
}

forEachDialect('emulator transitions', (app) => {
  test('immediate (the kind\'s rule): running at the host\'s first pass, never loading, the image not waited for', async () => {
    await fresh(app());
    const r = await setRule(app(), { mode: 'immediate' });
    assert.equal(r.status, 200, r.raw);
    assert.deepEqual({ ...r.body.transition, updated_at: 0 }, { kind: 'instance', instance_id: null, mode: 'immediate', seconds: null, updated_at: 0 });
    const m = await addMachine(app());
    const t0 = app().clock.now();
    const { id } = await rentOk(app(), offerFor(m, 1), { image: 'transitions/immediate:1' });
    await app().advance(PROVISION_DELAY_S);
    assert.equal(await status(app(), id), 'running');
    assert.deepEqual(await events(app(), id, t0), [[null, 0], ['running', PROVISION_DELAY_S]]);
    const list = await app().request('GET', '/_emu/transitions');
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.transitions.map((t: any) => [t.kind, t.instance_id, t.mode]), [['instance', null, 'immediate']]);
    assert.deepEqual(list.body.default_boot_seconds, app().config.simBootSeconds);
  });

  test('delay N: running N seconds after the change, loading meanwhile; the same with the image on the machine', async () => {
    await fresh(app());
    assert.equal((await setRule(app(), { kind: 'instance', mode: 'delay', seconds: 30 })).status, 200);
    const m = await addMachine(app());
    for (const round of [1, 2]) {
      const t0 = app().clock.now();
      const { id } = await rentOk(app(), offerFor(m, 1), { image: 'transitions/delay:1' });
      await app().advance(PROVISION_DELAY_S);
      assert.equal(await status(app(), id), 'loading', `round ${round}: loading at the first pass`);
      await app().advance(30 - PROVISION_DELAY_S - 0.5);
      assert.equal(await status(app(), id), 'loading', `round ${round}: half a second before`);
      await app().advance(0.5);
      assert.equal(await status(app(), id), 'running', `round ${round}: at 30 s`);
      assert.deepEqual(await events(app(), id, t0), [[null, 0], ['loading', PROVISION_DELAY_S], ['running', 30]], `round ${round}`);
    }
  });

  test('manual: loading until advanced, however far the clock goes; advanced step by step; then 409', async () => {
    await fresh(app());
    assert.equal((await setRule(app(), { mode: 'manual' })).status, 200);
    const m = await addMachine(app());
    const { id } = await rentOk(app(), offerFor(m, 1), { image: 'transitions/manual:1', runtype: 'ssh_direct' });
    assert.equal(await status(app(), id), null);
    // Provisioning → loading: the host's pass now, not at the provisioning delay.
    let r = await advanceInstance(app(), id);
    assert.equal(r.status, 200, r.raw);
    assert.deepEqual(r.body, { success: true, instance_id: id, actual_status: 'loading' });
    await app().advance(3600);
    assert.equal(await status(app(), id), 'loading', 'an hour later, still loading');
    r = await advanceInstance(app(), id);
    assert.deepEqual(r.body, { success: true, instance_id: id, actual_status: 'running' });
    const s = await statusOf(app(), id);
    assert.equal(s.actual_status, 'running');
    assert.deepEqual(Object.keys(s.ports), ['22/tcp'], 'its ports are bound');
    r = await advanceInstance(app(), id);
    assert.equal(r.status, 409, r.raw);
    assert.equal(r.body.error, 'conflict');
    assert.match(r.body.msg, /nothing is pending for instance \d+: it is running/);

    // A start goes through the gate too: loading ("starting the container") until advanced.
    assert.equal((await app().request('PUT', `/api/v0/instances/${id}/`, { body: { state: 'stopped' } })).status, 200);
    r = await advanceInstance(app(), id);
    assert.deepEqual(r.body.actual_status, 'stopped', `a pending stop is done at once: ${r.raw}`);
    assert.equal((await app().request('PUT', `/api/v0/instances/${id}/`, { body: { state: 'running' } })).status, 200);
    await app().advance(600);
    const starting = await statusOf(app(), id);
    assert.deepEqual([starting.actual_status, starting.status_msg], ['loading', 'starting the container']);
    r = await advanceInstance(app(), id);
    assert.equal(r.body.actual_status, 'running');
  });

  test('a reboot under delay: the container stops at the host\'s pass and starts again N seconds after the reboot', async () => {
    await fresh(app());
    assert.equal((await setRule(app(), { mode: 'immediate' })).status, 200);
    const m = await addMachine(app());
    const { id } = await rentOk(app(), offerFor(m, 1), { image: 'transitions/reboot:1' });
    await app().advance(PROVISION_DELAY_S);
    assert.equal(await status(app(), id), 'running');
    const [before] = (await app().services.simhost!.containers(m.machine_id)).filter((c) => c.instance_id === id);
    assert.equal((await setRule(app(), { mode: 'delay', seconds: 10 })).status, 200);
    const t0 = app().clock.now();
    assert.equal((await app().request('PUT', `/api/v0/instances/reboot/${id}/`, { body: {} })).status, 200);
    await app().advance(PROVISION_DELAY_S);
    const c1 = (await app().services.simhost!.containers(m.machine_id)).filter((c) => c.instance_id === id);
    assert.deepEqual(c1.map((c) => [c.id, c.status]), [[before.id, 'exited']], 'stopped, waiting at its gate');
    assert.equal(await status(app(), id), 'loading');
    await app().advance(10 - PROVISION_DELAY_S - 0.5);
    assert.equal(await status(app(), id), 'loading');
    await app().advance(0.5);
    assert.equal(await status(app(), id), 'running');
    const c2 = (await app().services.simhost!.containers(m.machine_id)).filter((c) => c.instance_id === id);
    assert.deepEqual(c2.map((c) => [c.id, c.status]), [[before.id, 'running']], 'the same container, started again');
    const evs = await events(app(), id, t0);
    assert.deepEqual(evs[evs.length - 1], ['running', 10]);
  });

  test('per-instance rules override the kind\'s; an instance\'s default is the seeded timing; clear lets a waiting boot go on', async () => {
    await fresh(app());
    assert.equal((await setRule(app(), { mode: 'manual' })).status, 200);
    const m = await addMachine(app(), { num_gpus: 3 });
    const t0 = app().clock.now();
    const a = await rentOk(app(), offerFor(m, 1), { image: 'transitions/over:1' });
    const b = await rentOk(app(), offerFor(m, 1), { image: 'transitions/over:2' });
    const c = await rentOk(app(), offerFor(m, 1), { image: 'transitions/over:3' });
    let r = await setRule(app(), { instance_id: b.id, mode: 'immediate' });
    assert.equal(r.status, 200, r.raw);
    assert.equal(r.body.transition.instance_id, b.id);
    assert.equal((await setRule(app(), { instance_id: c.id, mode: 'default' })).status, 200);
    await app().advance(PROVISION_DELAY_S);
    assert.equal(await status(app(), a.id), 'loading', 'a: the kind\'s manual');
    assert.equal(await status(app(), b.id), 'running', 'b: its own immediate');
    assert.equal(await status(app(), c.id), 'loading', 'c: the seeded pull');
    const boot = bootSeconds(app().config.seed, app().config.simBootSeconds, c.id, 1);
    await app().advance(boot - PROVISION_DELAY_S);
    assert.equal(await status(app(), c.id), 'running', 'c: at its seeded boot time');
    assert.deepEqual(await events(app(), c.id, t0), [[null, 0], ['loading', PROVISION_DELAY_S], ['running', boot]]);
    assert.equal(await status(app(), a.id), 'loading');
    const list = (await app().request('GET', '/_emu/transitions')).body.transitions;
    assert.deepEqual(list.map((t: any) => [t.instance_id, t.mode]), [[null, 'manual'], [b.id, 'immediate'], [c.id, 'default']]);

    // One instance's rule cleared, then all: a's boot waiting for its advance goes on with the seeded timing.
    r = await app().request('DELETE', '/_emu/transitions', { query: { instance_id: String(b.id) } });
    assert.deepEqual(r.body, { success: true, removed: 1 });
    r = await app().request('DELETE', '/_emu/transitions');
    assert.deepEqual(r.body, { success: true, removed: 2 });
    assert.deepEqual((await app().request('GET', '/_emu/transitions')).body.transitions, []);
    await app().advance(BOOT_MAX_S);
    assert.equal(await status(app(), a.id), 'running');
  });

  test('bad input: 400 naming the field; unknown instance 404; /_emu/reset clears the rules', async () => {
    await fresh(app());
    let r = await setRule(app(), { mode: 'delay' });
    assert.equal(r.status, 400, r.raw);
    assert.match(r.body.msg, /^seconds: /);
    r = await setRule(app(), { mode: 'immediate', seconds: 3 });
    assert.equal(r.status, 400);
    assert.match(r.body.msg, /^seconds: only with mode delay/);
    r = await setRule(app(), { mode: 'sometimes' });
    assert.equal(r.status, 400);
    assert.match(r.body.msg, /mode/);
    r = await setRule(app(), { mode: 'delay', seconds: -1 });
    assert.equal(r.status, 400);
    assert.match(r.body.msg, /seconds/);
    r = await setRule(app(), { kind: 'volume', mode: 'immediate' });
    assert.equal(r.status, 400);
    assert.match(r.body.msg, /kind/);
    r = await setRule(app(), { instance_id: 999_999, mode: 'manual' });
    assert.equal(r.status, 404, r.raw);
    assert.deepEqual([r.body.success, r.body.error, r.body.msg], [false, 'not_found', 'instance 999999 not found']);
    r = await advanceInstance(app(), 999_999);
    assert.equal(r.status, 404);
    r = await app().request('POST', '/_emu/instances/abc/advance');
    assert.equal(r.status, 400);
    assert.equal((await app().request('GET', '/_emu/transitions', { key: null })).status, 401);

    assert.equal((await setRule(app(), { mode: 'manual' })).status, 200);
    assert.equal((await app().request('POST', '/_emu/reset', { body: {} })).status, 200);
    assert.deepEqual((await app().request('GET', '/_emu/transitions')).body.transitions, []);
  });

  test('a slow-pull window (host event): pulls starting on its machines take its time until it closes; listed while open', async () => {
    await fresh(app());
    const m = await addMachine(app());
    const other = await addMachine(app());
    const now = app().clock.now();
    await app().store.db.transaction().execute((tx) => slowPull(tx, { ref: 'event:1', machineIds: [m.machine_id], pullSeconds: 100, until: now + 500 }));
    const list = (await app().request('GET', '/_emu/transitions')).body;
    assert.deepEqual(list.slow_pulls, [{ ref: 'event:1', machine_id: m.machine_id, pull_seconds: 100, until: now + 500 }]);
    const t0 = app().clock.now();
    const slow = await rentOk(app(), offerFor(m, 1), { image: 'transitions/slow:1' });
    const normal = await rentOk(app(), offerFor(other, 1), { image: 'transitions/slow:1' });
    await app().advance(BOOT_MAX_S);
    assert.equal(await status(app(), normal.id), 'running', 'another machine pulls as seeded');
    assert.equal(await status(app(), slow.id), 'loading');
    await app().advance(PROVISION_DELAY_S + 100 - BOOT_MAX_S);
    assert.equal(await status(app(), slow.id), 'running');
    assert.deepEqual(await events(app(), slow.id, t0), [[null, 0], ['loading', PROVISION_DELAY_S], ['running', PROVISION_DELAY_S + 100]]);

    // Ended early: the next pull there takes the seeded time again.
    await app().store.db.transaction().execute((tx) => endSlowPull(tx, 'event:1'));
    assert.deepEqual((await app().request('GET', '/_emu/transitions')).body.slow_pulls, []);
    const after = await rentOk(app(), offerFor(m, 1), { image: 'transitions/slow:2' });
    await app().advance(BOOT_MAX_S);
    assert.equal(await status(app(), after.id), 'running');

    // An advance ends a pull now, whatever its time.
    await app().store.db.transaction().execute((tx) => slowPull(tx, { ref: 'event:2', machineIds: [other.machine_id], pullSeconds: 1000, until: null }));
    const held = await rentOk(app(), offerFor(other, 1), { image: 'transitions/slow:3' });
    await app().advance(PROVISION_DELAY_S);
    assert.equal(await status(app(), held.id), 'loading');
    const r = await advanceInstance(app(), held.id);
    assert.deepEqual(r.body, { success: true, instance_id: held.id, actual_status: 'running' });
    await app().store.db.transaction().execute((tx) => endSlowPull(tx, 'event:2'));
  });
});
