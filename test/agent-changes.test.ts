// The change feed of machines' desired states (src/agent-server/agent-server-changes.ts): held long-polls re-read only machines
// it names, and a poll's renewal reuses its last state while the machine's epoch stands. So it must name every
// machine whose desired state's inputs were written, in any process, and nothing of a rolled-back transaction.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createTestApp, DIALECTS, type TestApp } from './helpers/harness.js';
import { desiredChanges, type DesiredChanges } from '../src/agent-server/agent-server-changes.js';

const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEw6kqUqCcIAqqvG2F1vJPrkmYx8bLBIl6RCsvx7mW0N changes@test';

/**
 * Resolves with the next report of the feed. No deadline of its own (a loaded machine can take seconds to commit and
 * deliver): a report that never comes fails the test at its timeout.
 */
function nextReport(feed: DesiredChanges): Promise<number[] | null> {
  return new Promise((resolve) => {
    const off = feed.subscribe((ids) => {
      off();
      resolve(ids);
    });
  });
}

/** A machine id no database has: a write naming it is the marker that what was committed before it has been heard. */
const MARKER_MACHINE = 999_999_999;
let markers = 0;
/** Writes a row that notifies MARKER_MACHINE (PostgreSQL: notifications arrive in commit order). */
const markerWrite = (t: TestApp) =>
  sql`insert into agent_log_requests (request_id, machine_id, instance_id, log_request_id, expires_at) values (${`marker_${++markers}`}, ${MARKER_MACHINE}, 0, ${markers}, 1)`.execute(t.store.db);

async function rentOnSimMachine(t: TestApp, key: string): Promise<{ id: number; machineId: number }> {
  const offers = await t.request('POST', '/api/v0/bundles/', { key, body: { rentable: { eq: true }, limit: 1 } });
  const ask = offers.body.offers[0];
  const rented = await t.request('PUT', `/api/v0/asks/${ask.id}/`, { key, body: { image: 'busybox', disk: 10 } });
  assert.equal(rented.status, 200, rented.raw);
  return { id: rented.body.new_contract, machineId: ask.machine_id };
}

for (const dialect of DIALECTS) {
  test(`${dialect}: the epoch of a machine stands while nothing is written, and moves with a write to its instances`, async () => {
    const t = await createTestApp(dialect);
    const feed = await desiredChanges(t.store, { hub: t.services.instances.hub, pollMs: 20, warn: (err) => assert.fail(String(err)) });
    try {
      const { api_key } = await t.createUser({ credit: 100 });
      // A notification reaches the listener after the commit that sent it, not with the reply: the rent's own must
      // have arrived before the epoch is read, or it would move the epoch during the quiet wait below.
      const rentReport = nextReport(feed);
      const { id, machineId } = await rentOnSimMachine(t, api_key);
      const rentGot = await rentReport;
      if (dialect === 'postgres') assert.deepEqual(rentGot, [machineId], 'the rent names its machine');
      else assert.equal(rentGot, null);
      const before = feed.epoch(machineId);
      // A bounded wait is the only evidence here: the feed polls every 20 ms and reports nothing when nothing changed,
      // and "no poll moved the epoch" has no event to wait for (a marker write would move it on SQLite, whose reports
      // name no machine). 100 ms is five polls.
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(feed.epoch(machineId), before, 'nothing was written');
      const report = nextReport(feed);
      assert.equal((await t.request('PUT', `/api/v0/instances/${id}/`, { key: api_key, body: { state: 'stopped' } })).status, 200);
      const got = await report;
      // PostgreSQL names the machine; SQLite says only that something changed.
      if (dialect === 'postgres') assert.deepEqual(got, [machineId]);
      else assert.equal(got, null);
      assert.notEqual(feed.epoch(machineId), before);
    } finally {
      await feed.close();
      await t.close();
    }
  });
}

// PostgreSQL alone (NOTIFY): without GPUPLANE_TEST_POSTGRES_URL, createTestApp throws and the test fails naming it.
{
  test('postgres: every table a desired state is built from notifies its machine at commit, a rollback notifies nothing, and other databases are not heard', async () => {
    const t = await createTestApp('postgres');
    const other = await createTestApp('postgres');
    const feed = await desiredChanges(t.store, { hub: t.services.instances.hub, pollMs: 20, warn: (err) => assert.fail(String(err)) });
    try {
      const { api_key } = await t.createUser({ credit: 100 });
      const reportOf = async (write: () => Promise<unknown>) => {
        const report = nextReport(feed);
        await write();
        return report;
      };
      // instances: the rent.
      const { id, machineId } = await (async () => {
        let rented: { id: number; machineId: number } | undefined;
        const got = await reportOf(async () => (rented = await rentOnSimMachine(t, api_key)));
        assert.deepEqual(got, [rented!.machineId]);
        return rented!;
      })();
      const db = t.store.db;
      // instance_ssh_keys
      assert.deepEqual(await reportOf(() => t.request('POST', `/api/v0/instances/${id}/ssh/`, { key: api_key, body: { ssh_key: KEY } })), [machineId]);
      // ssh_keys: the renter's account keys go into every container of theirs.
      assert.deepEqual(await reportOf(() => t.request('POST', '/api/v0/ssh/', { key: api_key, body: { ssh_key: KEY.replace('changes@test', 'account@test') } })), [machineId]);
      // agent_log_requests, instance_commands, instance_snapshots
      assert.deepEqual(
        await reportOf(() => sql`insert into agent_log_requests (request_id, machine_id, instance_id, log_request_id, expires_at) values ('log_t', ${machineId}, ${id}, 1, 1)`.execute(db)),
        [machineId],
      );
      assert.deepEqual(
        await reportOf(() => sql`insert into instance_commands (instance_id, machine_id, request_id, token_hash, argv, created_at, expires_at) values (${id}, ${machineId}, 'cmd_t', 'h', '[]', 1, 2)`.execute(db)),
        [machineId],
      );
      assert.deepEqual(
        await reportOf(() => sql`insert into instance_snapshots (instance_id, machine_id, request_id, image, pause, created_at) values (${id}, ${machineId}, 'snap_t', 'img', 0, 1)`.execute(db)),
        [machineId],
      );
      // A rolled-back write is never heard: the first report after it is the marker written next, alone.
      const before = feed.epoch(machineId);
      const rolledBack = nextReport(feed);
      await db.transaction().execute(async (tx) => {
        await sql`update instances set label = 'x' where id = ${id}`.execute(tx);
        throw new Error('roll back');
      }).catch(() => undefined);
      await markerWrite(t);
      assert.deepEqual(await rolledBack, [MARKER_MACHINE]);
      assert.equal(feed.epoch(machineId), before);
      // Another gpuplane database (schema) in the same PostgreSQL: its writes are not this one's. Its rent commits
      // before this database's marker, so its notification, were it heard, would come first.
      const stranger = await other.createUser({ credit: 100 });
      const quiet = nextReport(feed);
      await rentOnSimMachine(other, stranger.api_key);
      await markerWrite(t);
      assert.deepEqual(await quiet, [MARKER_MACHINE]);
    } finally {
      await feed.close();
      await other.close();
      await t.close();
    }
  });
}
