// The emulator's simulated hosts (issue 13, src/emulator/simulated-hosts/): a simulated container runtime kept in the database and an
// agent that drives it with the real agent's plan/observe and the status route's report application. A boot follows
// null → loading → running on the virtual clock (the pull takes the seeded boot time); stop, start and destroy
// converge the simulated containers; every emulator fault acts on the runtime or the agent; the state survives a
// restart and two processes stepping one machine at once make one container.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestApp, DIALECTS, dropSchema, forEachDialect, uniqueSchema, type TestApp } from './helpers/harness.js';
import { addMachine, BOOT_MAX_S, offerFor, rentOk, statusOf } from './instances-fixtures.js';
import { hostWithMachine } from './agent-server-fixtures.js';
import { HEARTBEAT_OFFLINE_AFTER_S, PROVISION_DELAY_S } from '../src/instances/instances-lifecycle.js';
import { bootSeconds, CRASH_EXIT_CODE, STOP_EXIT_CODE } from '../src/emulator/simulated-hosts/simhost-runtime.js';
import { JOB_SIM_STEP, STEP_RETRY_S } from '../src/emulator/simulated-hosts/simhost-agent.js';
import type { Tx } from '../src/platform/db/connect.js';

const containers = (app: TestApp, machineId: number) => app.services.simhost!.containers(machineId);
const containersOf = async (app: TestApp, machineId: number, id: number) => (await containers(app, machineId)).filter((c) => c.instance_id === id);
const fault = (app: TestApp, body: Record<string, unknown>) => app.request('POST', '/_emu/faults', { body });
const setState = (app: TestApp, id: number, state: string) => app.request('PUT', `/api/v0/instances/${id}/`, { body: { state } });
/** The agent's pass on the machine now, in a transaction of its own (as after an event of its runtime). */
const step = (app: TestApp, machineId: number) =>
  app.store.db.transaction().execute((tx) => app.services.simhost!.runtime.step(tx, machineId, app.clock.now()));

async function states(app: TestApp, id: number): Promise<{ status: string | null; msg: string | null; at: number }[]> {
  const rows = await app.store.db.selectFrom('instance_events').select(['actual_status', 'status_msg', 'at']).where('instance_id', '=', id).orderBy('id').execute();
  return rows.map((r) => ({ status: r.actual_status, msg: r.status_msg, at: Number(r.at) }));
}

forEachDialect('simulated hosts: runtime and agent', (app) => {
  test('a boot: null, loading (pulling) after the provisioning delay, running after the seeded boot time, with its ports', async () => {
    const m = await addMachine(app(), { num_gpus: 2, direct_port_count: 100 });
    const t0 = app().clock.now();
    const { id } = await rentOk(app(), offerFor(m, 1), { runtype: 'ssh_direct', image: 'simhost/boot:1' });
    // The boot time of the emulator, as it always was: the seed, the instance, its state version once booting (1).
    const boot = bootSeconds(app().config.seed, app().config.simBootSeconds, id, 1);
    assert.ok(boot >= PROVISION_DELAY_S + 1, `boot ${boot}`);
    await app().advance(PROVISION_DELAY_S / 2);
    assert.equal((await statusOf(app(), id)).actual_status, null);
    assert.deepEqual(await containers(app(), m.machine_id), [], 'nothing happens on the host before the provisioning delay');

    await app().advance(PROVISION_DELAY_S / 2);
    const loading = await statusOf(app(), id);
    assert.equal(loading.actual_status, 'loading');
    assert.equal(loading.status_msg, 'pulling the image');
    assert.deepEqual(loading.ports, {});
    assert.deepEqual(await containers(app(), m.machine_id), [], 'no container while its image is pulled');

    await app().advance(boot - PROVISION_DELAY_S - 0.5);
    assert.equal((await statusOf(app(), id)).actual_status, 'loading', 'half a second before the boot time');
    await app().advance(1);
    const running = await statusOf(app(), id);
    assert.equal(running.actual_status, 'running');
    assert.equal(running.status_msg, null);
    const [c] = await containers(app(), m.machine_id);
    assert.equal(c.status, 'running');
    assert.equal(c.name, `gpuplane-${m.machine_id}-${id}`);
    assert.deepEqual(running.ports, JSON.parse(c.ports), 'the ports shown are the container\'s');
    assert.deepEqual(Object.keys(running.ports), ['22/tcp']);
    const row = await app().store.db.selectFrom('instances').select('running_since').where('id', '=', id).executeTakeFirstOrThrow();
    assert.ok(Math.abs(Number(row.running_since) - (t0 + boot)) < 1e-6, `running since ${row.running_since}, booted at ${t0 + boot}`);
    assert.deepEqual((await states(app(), id)).map((s) => s.status), [null, 'loading', 'running']);

    // No machine key, no agent row: the real agents' liveness sweep never takes a simulated machine offline.
    assert.deepEqual(await app().store.db.selectFrom('agent_machines').select('machine_id').where('machine_id', '=', m.machine_id).execute(), []);
    await app().advance(app().config.agentOfflineAfter * 3);
    assert.equal((await statusOf(app(), id)).actual_status, 'running');
  });

  test('an image already on the machine is not pulled again: the next instance runs after the provisioning delay', async () => {
    const m = await addMachine(app(), { num_gpus: 2 });
    const a = await rentOk(app(), offerFor(m, 1), { image: 'simhost/cached:1' });
    await app().advance(BOOT_MAX_S);
    const t1 = app().clock.now();
    const b = await rentOk(app(), offerFor(m, 1), { image: 'simhost/cached:1' });
    await app().advance(PROVISION_DELAY_S);
    assert.equal((await statusOf(app(), b.id)).actual_status, 'running');
    assert.deepEqual((await states(app(), b.id)).map((s) => [s.status, s.at - t1]), [[null, 0], ['running', PROVISION_DELAY_S]]);
    assert.equal((await containers(app(), m.machine_id)).length, 2);
    assert.equal((await statusOf(app(), a.id)).actual_status, 'running');
  });

  test('stop, start, recycle and destroy converge the containers: one per instance, however often the agent passes', async () => {
    const m = await addMachine(app(), { num_gpus: 1 });
    const { id } = await rentOk(app(), offerFor(m, 1));
    await app().advance(BOOT_MAX_S);
    const [first] = await containersOf(app(), m.machine_id, id);
    assert.equal(first.status, 'running');

    assert.equal((await setState(app(), id, 'stopped')).status, 200);
    await app().advance(PROVISION_DELAY_S);
    let [c] = await containersOf(app(), m.machine_id, id);
    assert.deepEqual([c.id, c.status, c.exit_code, c.ports], [first.id, 'exited', STOP_EXIT_CODE, '{}'], 'stopped, kept');
    assert.equal((await statusOf(app(), id)).actual_status, 'stopped');

    assert.equal((await setState(app(), id, 'running')).status, 200);
    await app().advance(PROVISION_DELAY_S);
    [c] = await containersOf(app(), m.machine_id, id);
    assert.deepEqual([c.id, c.status], [first.id, 'running'], 'the same container starts again');
    assert.equal((await statusOf(app(), id)).actual_status, 'running');

    assert.equal((await app().request('PUT', `/api/v0/instances/recycle/${id}/`, { body: {} })).status, 200);
    await app().advance(PROVISION_DELAY_S);
    assert.equal((await statusOf(app(), id)).actual_status, 'loading', 'recycle pulls the image afresh');
    [c] = await containersOf(app(), m.machine_id, id);
    assert.equal(c.id, first.id, 'the old container runs on until the new image is here');
    await app().advance(BOOT_MAX_S);
    const after = await containersOf(app(), m.machine_id, id);
    assert.equal(after.length, 1);
    assert.notEqual(after[0].id, first.id);
    assert.deepEqual([after[0].generation, after[0].status], [2, 'running']);

    for (let i = 0; i < 3; i++) await step(app(), m.machine_id);
    assert.equal((await containersOf(app(), m.machine_id, id)).length, 1, 'no duplicate after passes repeat');

    assert.equal((await app().request('DELETE', `/api/v0/instances/${id}/`)).status, 200);
    await app().advance(PROVISION_DELAY_S);
    assert.deepEqual(await containers(app(), m.machine_id), [], 'a destroyed instance\'s container is removed');
    const known = await app().store.db.selectFrom('sim_instances').select('instance_id').where('instance_id', '=', id).execute();
    assert.deepEqual(known, [], 'and the agent forgets it');
  });

  test('exited: the container exits and the report makes the instance exited; start restarts the same container', async () => {
    const m = await addMachine(app(), { num_gpus: 1 });
    const { id } = await rentOk(app(), offerFor(m, 1));
    await app().advance(BOOT_MAX_S);
    const [before] = await containersOf(app(), m.machine_id, id);
    assert.equal((await fault(app(), { fault: 'exited', instance_id: id })).status, 200);
    const [c] = await containersOf(app(), m.machine_id, id);
    assert.deepEqual([c.id, c.status, c.exit_code], [before.id, 'exited', CRASH_EXIT_CODE]);
    const inst = await statusOf(app(), id);
    assert.equal(inst.actual_status, 'exited');
    assert.equal(inst.status_msg, `container exited with code ${CRASH_EXIT_CODE}`);
    assert.deepEqual(inst.ports, {});
    await app().advance(3600);
    assert.equal((await statusOf(app(), id)).actual_status, 'exited', 'an exited container stays exited');

    assert.equal((await setState(app(), id, 'running')).status, 200);
    await app().advance(PROVISION_DELAY_S);
    assert.equal((await statusOf(app(), id)).actual_status, 'running');
    assert.deepEqual((await containersOf(app(), m.machine_id, id)).map((x) => [x.id, x.status]), [[before.id, 'running']]);
  });

  test('exited while the image is still pulled: the container is found exited at once', async () => {
    const m = await addMachine(app(), { num_gpus: 1 });
    const { id } = await rentOk(app(), offerFor(m, 1), { image: 'simhost/crash-early:1' });
    await app().advance(PROVISION_DELAY_S);
    assert.equal((await statusOf(app(), id)).actual_status, 'loading');
    assert.equal((await fault(app(), { fault: 'exited', instance_id: id })).status, 200);
    assert.equal((await statusOf(app(), id)).actual_status, 'exited');
    assert.deepEqual((await containersOf(app(), m.machine_id, id)).map((c) => c.status), ['exited']);
    await app().advance(BOOT_MAX_S);
    assert.equal((await statusOf(app(), id)).actual_status, 'exited', 'the pull ending does not start a crashed container');
  });

  test('stall: the pull hangs (loading, no container) however long the clock runs; recover finishes it', async () => {
    const m = await addMachine(app(), { num_gpus: 2 });
    const { id } = await rentOk(app(), offerFor(m, 1), { image: 'simhost/stall:1' });
    await app().advance(BOOT_MAX_S);
    assert.equal((await statusOf(app(), id)).actual_status, 'running');
    assert.equal((await fault(app(), { fault: 'stall', instance_id: id })).status, 200);
    let inst = await statusOf(app(), id);
    assert.equal(inst.actual_status, 'loading');
    assert.equal(inst.status_msg, 'pulling the image');
    assert.deepEqual(await containersOf(app(), m.machine_id, id), [], 'its container is gone, its image pull hangs');
    const image = await app().store.db.selectFrom('sim_images').selectAll().where('machine_id', '=', m.machine_id).where('image', '=', 'simhost/stall:1').executeTakeFirstOrThrow();
    assert.equal(image.ready_at, null);
    await app().advance(3600);
    assert.equal((await statusOf(app(), id)).actual_status, 'loading');

    assert.equal((await fault(app(), { fault: 'recover', instance_id: id })).status, 200);
    inst = await statusOf(app(), id);
    assert.equal(inst.actual_status, 'running');
    assert.deepEqual((await containersOf(app(), m.machine_id, id)).map((c) => c.status), ['running']);
  });

  test('unknown and offline: the agent says nothing of the instance (its container runs on); recover brings it back with it', async () => {
    const m = await addMachine(app(), { num_gpus: 3 });
    const a = await rentOk(app(), offerFor(m, 1));
    const b = await rentOk(app(), offerFor(m, 1));
    await app().advance(BOOT_MAX_S);
    const ports = (await statusOf(app(), a.id)).ports;
    assert.equal((await fault(app(), { fault: 'unknown', instance_id: a.id })).status, 200);
    assert.equal((await fault(app(), { fault: 'offline', instance_id: b.id })).status, 200);
    assert.equal((await statusOf(app(), a.id)).actual_status, 'unknown');
    assert.equal((await statusOf(app(), b.id)).actual_status, 'offline');
    // The agent's passes (another instance on the machine changes) report neither.
    const c = await rentOk(app(), offerFor(m, 1), { target_state: 'stopped' });
    await app().advance(PROVISION_DELAY_S);
    for (let i = 0; i < 2; i++) await step(app(), m.machine_id);
    assert.equal((await statusOf(app(), a.id)).actual_status, 'unknown');
    assert.equal((await statusOf(app(), b.id)).actual_status, 'offline');
    assert.deepEqual((await containersOf(app(), m.machine_id, a.id)).map((x) => x.status), ['running'], 'its container runs on, unheard');
    await app().advance(HEARTBEAT_OFFLINE_AFTER_S);
    assert.equal((await statusOf(app(), a.id)).actual_status, 'offline', 'the control plane\'s own timeout');

    for (const id of [a.id, b.id]) assert.equal((await fault(app(), { fault: 'recover', instance_id: id })).status, 200);
    const back = await statusOf(app(), a.id);
    assert.equal(back.actual_status, 'running');
    assert.deepEqual(back.ports, ports, 'with the same container and ports');
    assert.equal((await statusOf(app(), b.id)).actual_status, 'running');
    assert.equal((await statusOf(app(), c.id)).actual_status, 'stopped');
  });

  test('a silent machine (no_heartbeat): its agent acts on nothing until recover, then converges', async () => {
    const m = await addMachine(app(), { num_gpus: 2 });
    const a = await rentOk(app(), offerFor(m, 1));
    const b = await rentOk(app(), offerFor(m, 1));
    await app().advance(BOOT_MAX_S);
    assert.equal((await fault(app(), { fault: 'no_heartbeat', machine_id: m.machine_id })).status, 200);
    assert.equal((await setState(app(), b.id, 'stopped')).status, 200);
    await app().advance(PROVISION_DELAY_S);
    assert.deepEqual((await containersOf(app(), m.machine_id, b.id)).map((c) => c.status), ['running'], 'a silent host does not act');
    assert.equal((await statusOf(app(), b.id)).actual_status, 'stopped', 'the control plane\'s stop stands');

    const res = await fault(app(), { fault: 'recover', machine_id: m.machine_id });
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual((await containersOf(app(), m.machine_id, b.id)).map((c) => c.status), ['exited'], 'back, it stops the container');
    assert.equal((await statusOf(app(), a.id)).actual_status, 'running');
  });

  test('a machine fault exited crashes its containers, and those it starts, until recover restarts them', async () => {
    const m = await addMachine(app(), { num_gpus: 2 });
    const a = await rentOk(app(), offerFor(m, 1));
    const stopped = await rentOk(app(), offerFor(m, 1), { target_state: 'stopped' });
    await app().advance(BOOT_MAX_S);
    const res = await fault(app(), { fault: 'exited', machine_id: m.machine_id });
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body.instance_ids, [a.id]);
    assert.equal((await statusOf(app(), a.id)).actual_status, 'exited');
    assert.equal((await statusOf(app(), stopped.id)).actual_status, 'stopped');
    assert.equal((await setState(app(), a.id, 'running')).status, 200);
    await app().advance(PROVISION_DELAY_S);
    assert.equal((await statusOf(app(), a.id)).actual_status, 'exited', 'it crashes as it starts');

    assert.equal((await fault(app(), { fault: 'recover', machine_id: m.machine_id })).status, 200);
    assert.equal((await statusOf(app(), a.id)).actual_status, 'running');
    assert.equal((await statusOf(app(), stopped.id)).actual_status, 'stopped', 'a stopped instance stays stopped');
  });

  test('a machine fault stall hangs every pull on it, a new instance\'s too, until recover', async () => {
    const m = await addMachine(app(), { num_gpus: 2 });
    const a = await rentOk(app(), offerFor(m, 1), { image: 'simhost/mstall:1' });
    await app().advance(BOOT_MAX_S);
    const res = await fault(app(), { fault: 'stall', machine_id: m.machine_id });
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body.instance_ids, [a.id]);
    assert.equal((await statusOf(app(), a.id)).actual_status, 'loading');
    const b = await rentOk(app(), offerFor(m, 1), { image: 'simhost/mstall:2' });
    await app().advance(3600);
    assert.equal((await statusOf(app(), a.id)).actual_status, 'loading');
    assert.equal((await statusOf(app(), b.id)).actual_status, 'loading');
    assert.deepEqual(await containers(app(), m.machine_id), []);

    assert.equal((await fault(app(), { fault: 'recover', machine_id: m.machine_id })).status, 200);
    assert.equal((await statusOf(app(), a.id)).actual_status, 'running');
    assert.equal((await statusOf(app(), b.id)).actual_status, 'running');
  });

  test('a real host\'s machine has no simulated agent: nothing is due for it, and runtime faults are refused', async () => {
    const host = await hostWithMachine(app());
    const machineId = host.machineId;
    const { id } = await rentOk(app(), machineId * 100 + 1);
    await app().advance(BOOT_MAX_S);
    assert.equal((await statusOf(app(), id)).actual_status, null, 'only its own agent moves it');
    const due = await app().store.db.selectFrom('sim_due').select('id').where('machine_id', '=', machineId).execute();
    assert.deepEqual(due, []);
    assert.deepEqual(await containers(app(), machineId), []);
    const refused = await fault(app(), { fault: 'exited', instance_id: id });
    assert.equal(refused.status, 409, refused.raw);
    assert.equal(refused.body.error, 'conflict');
  });
});

/** One database opened twice in turn (a restart), or by two processes at once (PostgreSQL). */
function sharedPlace(dialect: string) {
  if (dialect === 'postgres') {
    const schema = uniqueSchema();
    return { open: () => createTestApp('postgres', { pgSchema: schema }), remove: () => dropSchema(schema) };
  }
  const dir = mkdtempSync(join(tmpdir(), 'gpuplane-simhost-'));
  const url = `sqlite:${join(dir, 'gpuplane.db')}`;
  return { open: () => createTestApp('sqlite', { config: { GPUPLANE_DATABASE_URL: url } }), remove: async () => rmSync(dir, { recursive: true, force: true }) };
}

for (const dialect of DIALECTS) {
  test(`simulated hosts [${dialect}]: a boot under way survives a restart of the server`, async () => {
    const place = sharedPlace(dialect);
    try {
      let app = await place.open();
      const m = await addMachine(app, { num_gpus: 1 });
      const { id } = await rentOk(app, offerFor(m, 1), { image: 'simhost/restart:1' });
      await app.advance(PROVISION_DELAY_S + 0.5);
      assert.equal((await statusOf(app, id)).actual_status, 'loading');
      await app.close();
      app = await place.open();
      try {
        await app.advance(BOOT_MAX_S);
        assert.equal((await statusOf(app, id)).actual_status, 'running');
        assert.equal((await containers(app, m.machine_id)).length, 1);
      } finally {
        await app.close();
      }
    } finally {
      await place.remove();
    }
  });
}

// PostgreSQL alone (two processes at once; SQLite has one writer): without GPUPLANE_TEST_POSTGRES_URL, createTestApp
// throws and the test fails naming it.
{
  test('simulated hosts [postgres]: two processes stepping one machine at once make each container once', async () => {
    const place = sharedPlace('postgres');
    const a = await place.open();
    const b = await place.open();
    try {
      const m = await addMachine(a, { num_gpus: 8 });
      const ids: number[] = [];
      for (let i = 0; i < 8; i++) ids.push((await rentOk(a, offerFor(m, 1), { image: 'simhost/two:1' })).id);
      await a.advance(BOOT_MAX_S);
      const running = await a.store.db.selectFrom('instances').select('id').where('id', 'in', ids).where('actual_status', '=', 'running').execute();
      assert.equal(running.length, 8);
      // Every container gone (as after a host's disk was wiped): both processes' agents pass at once, many times.
      await a.store.db.deleteFrom('sim_containers').where('machine_id', '=', m.machine_id).execute();
      await Promise.all([...Array(6)].map((_, i) => step(i % 2 ? b : a, m.machine_id)));
      const made = await containers(a, m.machine_id);
      assert.deepEqual(made.map((c) => c.instance_id).sort((x, y) => x! - y!), ids, 'one container per instance');

      // Two step jobs due at once, one in each process: the second finds the work taken, or the machine held by the
      // first and comes back to it STEP_RETRY_S later (by design); either way each container is made once.
      await a.store.db.deleteFrom('sim_containers').where('machine_id', '=', m.machine_id).execute();
      const now = a.clock.now();
      for (const app of [a, b]) {
        await app.store.db.insertInto('sim_due').values({ machine_id: m.machine_id, due_at: now }).execute();
        await app.scheduler.schedule(JOB_SIM_STEP, now, {});
      }
      b.clock.set(now);
      await Promise.all([a.scheduler.runDue(now + STEP_RETRY_S), b.scheduler.runDue(now + STEP_RETRY_S)]);
      const remade = await containers(a, m.machine_id);
      assert.deepEqual(remade.map((c) => c.instance_id).sort((x, y) => x! - y!), ids, 'one container per instance');
    } finally {
      await a.close();
      await b.close();
      await place.remove();
    }
  });
}

// PostgreSQL alone (row locks another transaction holds): without GPUPLANE_TEST_POSTGRES_URL, createTestApp throws.
{
  /** Runs `hold` in a transaction left open until the returned `release` is called. */
  async function holding(app: TestApp, hold: (tx: Tx) => Promise<void>): Promise<() => Promise<void>> {
    let release!: () => void;
    let held!: () => void;
    const done = new Promise<void>((r) => (release = r));
    const taken = new Promise<void>((r) => (held = r));
    const tx = app.store.db.transaction().execute(async (t) => {
      await hold(t);
      held();
      await done;
    });
    await Promise.race([taken, tx]);
    return async () => {
      release();
      await tx;
    };
  }

  const holders: [string, (app: TestApp, machineId: number) => (tx: Tx) => Promise<void>][] = [
    ['runtime (another process\'s pass, a fault)', (app, id) => (tx) => app.services.simhost!.runtime.lockMachine(tx, id)],
    ['row (a rent or destroy there)', (app, id) => (tx) => app.services.fleet.lockMachine(tx, id)],
  ];
  for (const [what, hold] of holders) {
    test(`simulated hosts [postgres]: a step passes over a machine whose ${what} another transaction holds, without waiting, and comes back to it`, { timeout: 60_000 }, async () => {
      const app = await createTestApp('postgres');
      try {
        const busy = await addMachine(app, { num_gpus: 1 });
        const free = await addMachine(app, { num_gpus: 1 });
        const a = await rentOk(app, offerFor(busy, 1), { image: 'simhost/busy:1' });
        const b = await rentOk(app, offerFor(free, 1), { image: 'simhost/busy:1' });
        const release = await holding(app, hold(app, busy.machine_id));
        try {
          // Would wait for the holder (and never end) if a step waited for a busy machine.
          await app.advance(BOOT_MAX_S);
          assert.equal((await statusOf(app, b.id)).actual_status, 'running', 'the other machine is stepped');
          assert.equal((await statusOf(app, a.id)).actual_status, null, 'the busy one is not');
          const due = await app.store.db.selectFrom('sim_due').select('due_at').where('machine_id', '=', busy.machine_id).execute();
          assert.equal(due.length, 1, 'its work stays due');
          const retry = await app.store.db.selectFrom('jobs').select('due_at').where('kind', '=', JOB_SIM_STEP).execute();
          assert.ok(retry.length === 1 && Number(retry[0].due_at) <= app.clock.now() + STEP_RETRY_S, `a run due for it shortly: ${JSON.stringify(retry)}`);
        } finally {
          await release();
        }
        await app.advance(BOOT_MAX_S);
        assert.equal((await statusOf(app, a.id)).actual_status, 'running', 'stepped once free');
      } finally {
        await app.close();
      }
    });
  }
}
