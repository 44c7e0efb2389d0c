// A destroy (and a stop, start or bid change) reads the caller's instance and locks its machine's row, then the
// instance's, in one statement (instances-store.ts `lockInScope`, MachinesApi.machineLockCondition). On PostgreSQL the
// order is what keeps these writers from deadlocking (MachinesApi.lockMachine): while another transaction holds the
// machine, the destroy waits for it without holding the instance; an instance outside the caller's scope takes no
// lock at all (404 at once).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { sql } from 'kysely';
import { createTestApp, DIALECTS, PG_URL, type TestApp } from './helpers/harness.js';
import { addMachine, offerFor, rentOk } from './instances-fixtures.js';

for (const dialect of DIALECTS) {
  describe(`lockInScope: one statement, the machine before the instance [${dialect}]`, () => {
    let app: TestApp;
    before(async () => {
      app = await createTestApp(dialect);
    });
    after(async () => {
      await app.close();
    });

    test('a destroy of an instance of another user is 404 no_such_instance; the owner\'s destroy goes through', async () => {
      const m = await addMachine(app);
      const { id } = await rentOk(app, offerFor(m, 1));
      const other = await app.request('POST', '/_emu/users', { body: { email: `other-${dialect}@example.com` } });
      assert.equal(other.status, 200, other.raw);
      const denied = await app.request('DELETE', `/api/v0/instances/${id}/`, { key: other.body.api_key });
      assert.equal(denied.status, 404, denied.raw);
      // Vast.ai's code for a destroy of what is not there (dstack reads it as "already gone"; issue 29 item 2).
      assert.equal(denied.body.error, 'no_such_instance');
      const done = await app.request('DELETE', `/api/v0/instances/${id}/`);
      assert.equal(done.status, 200, done.raw);
      const again = await app.request('DELETE', `/api/v0/instances/${id}/`);
      assert.equal(again.status, 404, 'destroyed: no longer found');
      assert.equal(again.body.error, 'no_such_instance');
    });

    if (dialect === 'postgres') {
      test('while the machine is held elsewhere, a destroy waits for it without holding the instance; another user\'s is 404 at once', async () => {
        const m = await addMachine(app);
        const { id } = await rentOk(app, offerFor(m, 1));
        const other = await app.request('POST', '/_emu/users', { body: { email: 'other-held@example.com' } });
        const schema = (await sql<{ s: string }>`SELECT current_schema() AS s`.execute(app.store.db)).rows[0].s;
        const connect = async () => {
          const c = new pg.Client({ connectionString: PG_URL, options: `-c search_path="${schema}"` });
          await c.connect();
          return c;
        };
        const holder = await connect();
        const probe = await connect();
        try {
          await holder.query('BEGIN');
          await holder.query('SELECT id FROM fleet_machines WHERE id = $1 FOR UPDATE', [m.machine_id]);
          const holderPid = (await holder.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;

          const destroy = app.request('DELETE', `/api/v0/instances/${id}/`);
          // The destroy's statement is waiting for the machine's row.
          for (let tries = 0; ; tries++) {
            const r = await probe.query(
              `SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid)) AND query LIKE '%locked_machine%'`,
              [holderPid],
            );
            if (r.rows[0].n === 1) break;
            assert.ok(tries < 500, 'the destroy never waited for the machine');
            await new Promise((resolve) => setTimeout(resolve, 10));
          }
          // Meanwhile the instance's row is free: it is locked only after the machine.
          await probe.query('BEGIN');
          const free = await probe.query('SELECT id FROM instances WHERE id = $1 FOR UPDATE NOWAIT', [id]);
          assert.equal(free.rows.length, 1);
          await probe.query('ROLLBACK');
          // Another user's destroy of it finds nothing to lock and answers at once.
          const denied = await app.request('DELETE', `/api/v0/instances/${id}/`, { key: other.body.api_key });
          assert.equal(denied.status, 404, denied.raw);

          await holder.query('COMMIT');
          const done = await destroy;
          assert.equal(done.status, 200, done.raw);
          const row = await app.store.db.selectFrom('instances').select('destroyed_at').where('id', '=', id).executeTakeFirstOrThrow();
          assert.notEqual(row.destroyed_at, null);
        } finally {
          await holder.end();
          await probe.end();
        }
      });
    }
  });
}
