// The change feed of machines' desired states (src/agent-server/agent-server-changes.ts): held long-polls re-read only machines
// it names, and a poll's renewal reuses its last state while the machine's epoch stands. So it must name every
// machine whose desired state's inputs were written, in any process, and nothing of a rolled-back transaction.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createTestApp, DIALECTS, type TestApp } from './helpers/harness.js';
import { desiredChanges, type DesiredChanges } from '../src/agent-server/agent-server-changes.js';

const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEw6kqUqCcIAqqvG2F1vJPrkmYx8bLBIl6RCsvx7mW0N changes@test';

/** Resolves with the next report of the feed, or 'none' if none comes within `ms`. */
function nextReport(feed: DesiredChanges, ms = 2000): Promise<number[] | null | 'none'> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      off();
      resolve('none');
    }, ms);
    const off = feed.subscribe((ids) => {
      clearTimeout(timer);
      off();
      resolve(ids);
    });
  });
}

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

if (DIALECTS.includes('postgres')) {
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
      // A rolled-back write is never heard.
      const before = feed.epoch(machineId);
      const rolledBack = nextReport(feed, 500);
      await db.transaction().execute(async (tx) => {
        await sql`update instances set label = 'x' where id = ${id}`.execute(tx);
        throw new Error('roll back');
      }).catch(() => undefined);
      assert.equal(await rolledBack, 'none');
      assert.equal(feed.epoch(machineId), before);
      // Another gpuplane database (schema) in the same PostgreSQL: its writes are not this one's.
      const stranger = await other.createUser({ credit: 100 });
      const quiet = nextReport(feed, 500);
      await rentOnSimMachine(other, stranger.api_key);
      assert.equal(await quiet, 'none');
    } finally {
      await feed.close();
      await other.close();
      await t.close();
    }
  });
}
