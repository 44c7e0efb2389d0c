// Bookkeeping writes (an audit entry, a key's last use, a client address) commit without waiting for the disk on
// PostgreSQL, each for its own statement only (platform/db/no-flush.ts): a trigger records the `synchronous_commit` in
// force as each row is written. Inside a caller's transaction they are written plainly, and that transaction keeps
// waiting for its flush; the connection's setting is unchanged afterwards. SQLite writes them plainly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { forEachDialect } from './helpers/harness.js';
import { auditStore } from '../src/audit/audit-store.js';
import { keysStore } from '../src/keys/keys-store.js';

forEachDialect('bookkeeping writes that do not wait for the disk', (app) => {
  test('audit entries, key touches and client addresses commit without a flush on PostgreSQL, and only themselves', async () => {
    const t = app();
    const db = t.store.db;
    const dialect = t.store.dialect;
    const { user } = await t.createUser({ credit: 10 });
    const key = await db.selectFrom('api_keys').select('id').where('user_id', '=', user.id).executeTakeFirstOrThrow();
    const audit = auditStore(db, dialect);
    const keys = keysStore(db, dialect);
    const entry = (action: string) => ({
      user_id: user.id, team_id: null, api_key_id: key.id, action, api_route: 'PUT /x', ip_address: '10.0.0.9', args: '{}', created_at: 5,
    });

    if (dialect === 'postgres') {
      await sql`CREATE TABLE commit_modes (tbl text, mode text)`.execute(db);
      await sql.raw(`CREATE FUNCTION note_commit_mode() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN INSERT INTO commit_modes VALUES (TG_TABLE_NAME, current_setting('synchronous_commit')); RETURN NULL; END $$`).execute(db);
      for (const table of ['audit_logs', 'api_keys', 'user_ipaddrs']) {
        await sql.raw(`CREATE TRIGGER note_commit_mode AFTER INSERT OR UPDATE ON ${table} FOR EACH ROW EXECUTE FUNCTION note_commit_mode()`).execute(db);
      }
    }

    await audit.insert(entry('alone'));
    await keys.touch(key.id, 7);
    await audit.sawIp(user.id, '10.0.0.9', 7);
    await audit.sawIp(user.id, '10.0.0.9', 8); // already recorded: the first sighting stays
    await db.transaction().execute(async (tx) => {
      await audit.insert(entry('in a transaction'), tx);
      await keys.touch(key.id, 9, tx);
      await audit.sawIp(user.id, '10.0.0.10', 9, tx);
      if (dialect === 'postgres') {
        const { rows } = await sql<{ synchronous_commit: string }>`SHOW synchronous_commit`.execute(tx);
        assert.equal(rows[0].synchronous_commit, 'on', "the caller's transaction still waits for its flush");
      }
    });

    // Every write landed, whatever the dialect.
    const actions = await db.selectFrom('audit_logs').select('action').where('user_id', '=', user.id).orderBy('id').execute();
    assert.deepEqual(actions.map((r) => r.action), ['alone', 'in a transaction']);
    const touched = await db.selectFrom('api_keys').select('last_used_at').where('id', '=', key.id).executeTakeFirstOrThrow();
    assert.equal(touched.last_used_at, 9);
    const ips = await db.selectFrom('user_ipaddrs').select(['ip', 'first_seen']).where('user_id', '=', user.id).orderBy('ip').execute();
    assert.deepEqual(ips, [{ ip: '10.0.0.10', first_seen: 9 }, { ip: '10.0.0.9', first_seen: 7 }]);
    if (dialect !== 'postgres') return;

    const modes = await sql<{ tbl: string; mode: string }>`SELECT tbl, mode FROM commit_modes`.execute(db);
    assert.deepEqual(modes.rows, [
      { tbl: 'audit_logs', mode: 'off' },
      { tbl: 'api_keys', mode: 'off' },
      { tbl: 'user_ipaddrs', mode: 'off' },
      { tbl: 'audit_logs', mode: 'on' },
      { tbl: 'api_keys', mode: 'on' },
      { tbl: 'user_ipaddrs', mode: 'on' },
    ]);
    // The setting ended with each statement: every pooled connection is back to the server's.
    const settings = await Promise.all(Array.from({ length: 4 }, () =>
      db.connection().execute(async (c) => (await sql<{ synchronous_commit: string }>`SHOW synchronous_commit`.execute(c)).rows[0].synchronous_commit)));
    assert.deepEqual(settings, ['on', 'on', 'on', 'on']);
  });
});
