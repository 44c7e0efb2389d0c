// Simulated host heartbeats (issue 3): a host that stops heartbeating turns its instances unknown once its last beat
// is older than the timeout, then offline; healthy hosts keep theirs running; recover resumes the beats.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { HEARTBEAT_OFFLINE_AFTER_S } from '../src/instances/instances-lifecycle.js';
import { sql } from 'kysely';
import { HEARTBEAT_INTERVAL_S, HEARTBEAT_TIMEOUT_S, JOB_HEARTBEAT } from '../src/emulator/simulated-hosts/simhost-heartbeat.js';
import { addMachine, BOOT_MAX_S, offerFor, rentOk, statusOf } from './instances-fixtures.js';

const fault = (app: TestApp, body: Record<string, unknown>) => app.request('POST', '/_emu/faults', { body });
const lastBeat = (app: TestApp, machineId: number) => app.services.simhost!.heartbeat.lastBeat(machineId);

async function unknownEvents(app: TestApp, id: number): Promise<number> {
  const rows = await app.store.db.selectFrom('instance_events').select('id').where('instance_id', '=', id).where('actual_status', '=', 'unknown').execute();
  return rows.length;
}

/** When the next heartbeat run is due (null: the chain is not running). */
const nextRun = (app: TestApp) => app.scheduler.nextDue(JOB_HEARTBEAT, -Infinity);

/** Every machine row but `except`'s, as stored (on PostgreSQL with its row version, xmin, which any write renews). */
async function machineRows(app: TestApp, except: number): Promise<unknown[]> {
  const q = app.store.db.selectFrom('fleet_machines').selectAll().where('id', '!=', except).orderBy('id');
  return app.dialect === 'postgres' ? q.select(sql<string>`xmin::text`.as('row_version')).execute() : q.execute();
}

forEachDialect('heartbeats', (app, dialect) => {
  test('a host that stops heartbeating: running until the timeout, then unknown (once), then offline', async () => {
    const m = await addMachine(app());
    const { id } = await rentOk(app(), offerFor(m, 1));
    await app().advance(BOOT_MAX_S);
    assert.equal((await statusOf(app(), id)).actual_status, 'running');

    const res = await fault(app(), { fault: 'no_heartbeat', machine_id: m.machine_id });
    assert.equal(res.status, 200, res.raw);
    const silentAt = app().clock.now();
    assert.equal(await lastBeat(app(), m.machine_id), silentAt);
    assert.equal((await statusOf(app(), id)).actual_status, 'running', 'nothing is noticed at once');

    await app().advance(HEARTBEAT_TIMEOUT_S - 1);
    assert.equal((await statusOf(app(), id)).actual_status, 'running', 'within the timeout the host is not lost yet');
    assert.equal(await lastBeat(app(), m.machine_id), silentAt, 'a silent host records no beat');

    // Found by the first heartbeat run after the timeout: at most one interval later.
    await app().advance(HEARTBEAT_INTERVAL_S + 1);
    const lost = await statusOf(app(), id);
    assert.equal(lost.actual_status, 'unknown');
    assert.equal(lost.status_msg, 'no heartbeat from host');
    const lostAt = app().clock.now();

    await app().advance(HEARTBEAT_OFFLINE_AFTER_S - HEARTBEAT_INTERVAL_S - 5);
    assert.equal((await statusOf(app(), id)).actual_status, 'unknown');
    await app().advance(HEARTBEAT_INTERVAL_S + 10);
    assert.equal((await statusOf(app(), id)).actual_status, 'offline');
    assert.ok(app().clock.now() - lostAt >= HEARTBEAT_OFFLINE_AFTER_S - HEARTBEAT_INTERVAL_S);

    await app().advance(6 * 3600);
    assert.equal((await statusOf(app(), id)).actual_status, 'offline');
    assert.equal(await unknownEvents(app(), id), 1, 'the host is reported lost once, not on every run');
    assert.equal(await app().services.simhost!.heartbeat.watching(), false, 'nothing left to watch: the job chain ended');
  });

  test('healthy hosts keep beating and their instances stay running across long advances', async () => {
    const healthy = await addMachine(app());
    const silent = await addMachine(app());
    const a = await rentOk(app(), offerFor(healthy, 1));
    const b = await rentOk(app(), offerFor(silent, 1));
    const stopped = await rentOk(app(), offerFor(silent, 1), { target_state: 'stopped' });
    await app().advance(BOOT_MAX_S);
    await fault(app(), { fault: 'no_heartbeat', machine_id: silent.machine_id });
    const silentAt = app().clock.now();
    await app().advance(HEARTBEAT_TIMEOUT_S + 2 * HEARTBEAT_INTERVAL_S);
    // The healthy host beat while the job ran; the silent one's last beat is when it went silent.
    assert.ok((await lastBeat(app(), healthy.machine_id))! > silentAt + HEARTBEAT_TIMEOUT_S);
    assert.equal(await lastBeat(app(), silent.machine_id), silentAt);
    assert.equal((await statusOf(app(), b.id)).actual_status, 'unknown');
    assert.equal((await statusOf(app(), stopped.id)).actual_status, 'stopped', 'a stopped instance stays stopped');

    await app().advance(3 * 86400);
    assert.equal((await statusOf(app(), a.id)).actual_status, 'running');
    assert.equal((await statusOf(app(), b.id)).actual_status, 'offline');
    assert.equal(await unknownEvents(app(), a.id), 0);
  });

  test('recover resumes heartbeats: the instances boot again and stay running', async () => {
    const m = await addMachine(app());
    const { id } = await rentOk(app(), offerFor(m, 1));
    await app().advance(BOOT_MAX_S);
    await fault(app(), { fault: 'no_heartbeat', machine_id: m.machine_id });
    await app().advance(HEARTBEAT_TIMEOUT_S + HEARTBEAT_INTERVAL_S + HEARTBEAT_OFFLINE_AFTER_S + 1);
    assert.equal((await statusOf(app(), id)).actual_status, 'offline');

    const res = await fault(app(), { fault: 'recover', machine_id: m.machine_id });
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body.instance_ids, [id]);
    assert.equal(await lastBeat(app(), m.machine_id), app().clock.now(), 'the host beats again at once');
    await app().advance(BOOT_MAX_S);
    assert.equal((await statusOf(app(), id)).actual_status, 'running');
    await app().advance(2 * 3600);
    assert.equal((await statusOf(app(), id)).actual_status, 'running');
    assert.equal(await unknownEvents(app(), id), 1);
  });

  test('a host that comes back within the timeout is never reported lost', async () => {
    const m = await addMachine(app());
    const { id } = await rentOk(app(), offerFor(m, 1));
    await app().advance(BOOT_MAX_S);
    await fault(app(), { fault: 'no_heartbeat', machine_id: m.machine_id });
    await app().advance(HEARTBEAT_TIMEOUT_S - HEARTBEAT_INTERVAL_S);
    await fault(app(), { fault: 'recover', machine_id: m.machine_id });
    await app().advance(3600);
    assert.equal((await statusOf(app(), id)).actual_status, 'running');
    assert.equal(await unknownEvents(app(), id), 0);
  });

  test('a silent host is not rentable; no_heartbeat needs a machine', async () => {
    const m = await addMachine(app(), { num_gpus: 1 });
    await fault(app(), { fault: 'no_heartbeat', machine_id: m.machine_id });
    const rent = await app().request('PUT', `/api/v0/asks/${offerFor(m, 1)}/`, { body: { image: 'ubuntu' } });
    assert.equal(rent.status, 410, rent.raw);
    assert.equal(rent.body.error, 'offer_unavailable');
    await fault(app(), { fault: 'recover', machine_id: m.machine_id });
    const { id } = await rentOk(app(), offerFor(m, 1));
    const bad = await fault(app(), { fault: 'no_heartbeat', instance_id: id });
    assert.equal(bad.status, 400, bad.raw);
    assert.equal(bad.body.error, 'bad_request');
  });

  // Issue 16: a run used to rewrite every healthy machine's row (20,000 at scale); a healthy host's beat is implicit.
  test('a heartbeat run writes no healthy machine row', async () => {
    const silent = await addMachine(app());
    const healthy = await addMachine(app());
    await rentOk(app(), offerFor(healthy, 1));
    await fault(app(), { fault: 'no_heartbeat', machine_id: silent.machine_id });
    const due = await nextRun(app());
    assert.ok(due !== null, 'a silent host starts the chain');
    const before = await machineRows(app(), silent.machine_id);
    assert.ok(before.length > 1);
    await app().advance(due - app().clock.now());
    assert.equal(await nextRun(app()), due + HEARTBEAT_INTERVAL_S, 'the run happened (and scheduled the next)');
    assert.deepEqual(await machineRows(app(), silent.machine_id), before);
    assert.equal(await lastBeat(app(), healthy.machine_id), app().clock.now(), 'a healthy host beat just now');
  });

  if (dialect === 'postgres') {
    test('a heartbeat run does not wait for a healthy machine row that another transaction holds locked', async () => {
      const silent = await addMachine(app());
      const healthy = await addMachine(app());
      await fault(app(), { fault: 'no_heartbeat', machine_id: silent.machine_id });
      const due = (await nextRun(app()))!;
      let blocked = false;
      let run: Promise<void> | undefined;
      await app().store.db.transaction().execute(async (trx) => {
        // As a rental or an agent's report holds its machine's row until it commits.
        await trx.selectFrom('fleet_machines').select('id').where('id', '=', healthy.machine_id).forUpdate().execute();
        const locker = (await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(trx)).rows[0].pid;
        let done = false;
        run = app().advance(due - app().clock.now()).finally(() => (done = true));
        // Until the run ends, or the server shows a session waiting for this transaction's lock (then committing
        // releases it, and the run ends after).
        while (!done && !blocked) {
          const waiting = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE ${locker} = ANY(pg_blocking_pids(pid))`.execute(trx);
          blocked = waiting.rows[0].n > 0;
          if (!blocked) await new Promise((r) => setTimeout(r, 10));
        }
      });
      await run;
      assert.equal(blocked, false, 'the run waited for the locked machine row');
      assert.equal(await nextRun(app()), due + HEARTBEAT_INTERVAL_S, 'the run happened');
    });
  }
});
