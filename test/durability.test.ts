// Durability (issue 2 §3): a process killed with SIGKILL in the middle of a stream of writes loses no write it
// acknowledged. On SQLite (a file, WAL) and on PostgreSQL; the restarted process serves every acknowledged write.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DIALECTS } from './helpers/harness.js';
import { call, freshPgDatabase, serve } from './helpers/spawn.js';

const KEY = 'gpk_durability_owner_key_0123456789';
/** Concurrent writers, so that several writes are in flight when the process dies. */
const WRITERS = 4;
/** Acknowledged writes to wait for before the kill. */
const ACKS_BEFORE_KILL = 120;

interface Acked {
  email: string;
  key: string;
  id: number;
}

for (const dialect of DIALECTS) {
  test(`SIGKILL during writes loses no acknowledged write [${dialect}]`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpuplane-durability-'));
    const pgDb = dialect === 'postgres' ? await freshPgDatabase() : undefined;
    const env = {
      GPUPLANE_DATABASE_URL: pgDb ? pgDb.url : `sqlite:${join(dir, 'gpuplane.db')}`,
      GPUPLANE_BOOTSTRAP_API_KEY: KEY,
      GPUPLANE_SECRET_KEY: 'durability-secret-key-0123456',
      GPUPLANE_SIM_MACHINES: '3',
    };
    try {
      const first = await serve(env);
      const acked: Acked[] = [];
      let signalled = false;
      // Each writer writes without pause until the dead server fails one of its requests, so writes keep arriving
      // across the kill. Whether one of them happens to be mid-transaction at that instant is up to the scheduler;
      // the property under test does not depend on it: every write that was acknowledged must survive.
      const writer = async (w: number) => {
        for (let i = 0; ; i++) {
          const email = `w${w}-${i}@durability.example.com`;
          try {
            const res = await call(first.url, 'POST', '/_emu/users', KEY, { email });
            // Acknowledged: the reply arrived and says the write is done.
            if (res.status === 200) acked.push({ email, key: res.body.api_key, id: res.body.user.id });
            else throw new Error(`write refused: ${res.status} ${JSON.stringify(res.body)}`);
          } catch (err) {
            if (!signalled) throw err;
            return;
          }
        }
      };
      let failure: unknown;
      const writers = Array.from({ length: WRITERS }, (_, w) => writer(w).catch((err) => void (failure ??= err)));
      while (acked.length < ACKS_BEFORE_KILL && failure === undefined) await new Promise((r) => setTimeout(r, 5));
      signalled = true;
      await first.kill('SIGKILL');
      assert.equal(first.child.signalCode, 'SIGKILL');
      await Promise.all(writers);
      if (failure !== undefined) throw failure;
      const ackedAtKill = acked.length;

      const second = await serve(env);
      try {
        const missing: string[] = [];
        for (const a of acked) {
          const me = await call(second.url, 'GET', '/api/v0/users/current', a.key);
          if (me.status !== 200 || me.body.id !== a.id || me.body.email !== a.email) missing.push(`${a.email}: ${me.status}`);
        }
        assert.deepEqual(missing, [], `${missing.length} of ${ackedAtKill} acknowledged writes were lost`);
        // Still writable after the crash.
        const after = await call(second.url, 'POST', '/_emu/users', KEY, { email: 'after-restart@durability.example.com' });
        assert.equal(after.status, 200);
      } finally {
        await second.stop();
      }
    } finally {
      await pgDb?.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
