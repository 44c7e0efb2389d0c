// Migrations 0039_simulated_hosts and 0040_instances_boot_timers_dropped (0032_simhost until issue 30) take over a
// database of the boot timers (before issue 13's simulated agent): a running instance of a simulated machine keeps
// running in a container with the ports it showed (no reboot), a boot under way is due for the simulated agent when
// its old boot step was, and the old `instance.boot` job and columns are gone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { createTestApp, DIALECTS, dropSchema, OWNER_KEY, PG_URL, T0, uniqueSchema } from './helpers/harness.js';
import { sha256Hex } from '../src/platform/crypto.js';
import { BOOT_MAX_S, statusOf } from './instances-fixtures.js';
import { MIGRATIONS } from '../src/migrations/index.js';
import { openStore, type DialectName } from '../src/platform/db/connect.js';
import { VirtualClock } from '../src/platform/clock.js';
import { cryptoRandom } from '../src/platform/random.js';
import { machinesServiceFactory } from '../src/machines/machines-service.js';
import { JOB_SIM_STEP } from '../src/emulator/simulated-hosts/simhost-agent.js';

const BEFORE = { migrations: MIGRATIONS.migrations.filter(([name]) => name < '0039') };
const PORTS = { '22/tcp': [{ HostIp: '0.0.0.0', HostPort: '40007' }] };

function place(dialect: DialectName) {
  if (dialect === 'postgres') {
    const schema = uniqueSchema();
    return {
      openOld: () => openStore(PG_URL!, { pgSchema: schema, migrations: BEFORE }),
      openApp: () => createTestApp('postgres', { pgSchema: schema }),
      remove: () => dropSchema(schema),
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'gpuplane-simhost-migration-'));
  const url = `sqlite:${join(dir, 'gpuplane.db')}`;
  return {
    openOld: () => openStore(url, { migrations: BEFORE }),
    openApp: () => createTestApp('sqlite', { config: { GPUPLANE_DATABASE_URL: url } }),
    remove: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

for (const dialect of DIALECTS) {
  test(`0039_simulated_hosts [${dialect}]: instances of the boot timers carry on under the simulated agent`, async () => {
    const p = place(dialect);
    try {
      const old = await p.openOld();
      const fleet = machinesServiceFactory({ store: old, clock: new VirtualClock(T0), random: cryptoRandom, config: { mode: 'emulator', seed: 1, simMachines: 2 } });
      await fleet.ensureSeeded();
      const db = old.db as any;
      // The owner of that database, with the key the test app uses.
      const { id: userId } = await db.insertInto('users').values({ email: 'old@example.com', is_admin: 1, created_at: T0 }).returning('id').executeTakeFirstOrThrow();
      await db.insertInto('api_keys').values({ user_id: userId, key_hash: sha256Hex(OWNER_KEY), kind: 'user', is_bootstrap: 1, created_at: T0 }).execute();
      const base = { user_id: userId, offer_id: 101, num_gpus: 1, image: 'old/image:1', runtype: 'ssh_direct', disk: 8, intended_status: 'running', created_at: T0 };
      const running = await db.insertInto('instances').values({
        ...base, machine_id: 1, gpu_indexes: '[0]', actual_status: 'running', ports: JSON.stringify(PORTS), running_since: T0 + 9, state_version: 3,
      }).returning('id').executeTakeFirstOrThrow();
      const booting = await db.insertInto('instances').values({
        ...base, machine_id: 2, gpu_indexes: '[0]', actual_status: 'loading', state_version: 2, boot_step_at: T0 + 5, boot_running_at: T0 + 12,
      }).returning('id').executeTakeFirstOrThrow();
      const event = (id: number, status: string | null, at: number) => ({ instance_id: id, user_id: userId, actual_status: status, intended_status: 'running', at });
      await db.insertInto('instance_events').values([
        event(running.id, null, T0), event(running.id, 'loading', T0 + 1), event(running.id, 'running', T0 + 9),
        event(booting.id, null, T0), event(booting.id, 'loading', T0 + 1),
      ]).execute();
      await db.insertInto('jobs').values({ kind: 'instance.boot', due_at: T0 + 5, payload: '{}', ref: null }).execute();
      await db.insertInto('kv').values({ key: 'virtual_clock_now', value: String(T0 + 2) }).execute();
      await old.close();

      const app = await p.openApp();
      try {
        const containers = await app.store.db.selectFrom('sim_containers').selectAll().orderBy('id').execute();
        assert.deepEqual(containers.map((c) => [c.machine_id, c.instance_id, c.generation, c.status, JSON.parse(c.ports)]), [[1, running.id, 1, 'running', PORTS]]);
        const record = await app.store.db.selectFrom('sim_instances').selectAll().where('instance_id', '=', running.id).executeTakeFirstOrThrow();
        assert.deepEqual([record.generation, record.boot, record.stopped, record.silent], [1, 1, 0, 0], 'the boot it was started for');
        assert.deepEqual(await app.store.db.selectFrom('sim_due').select(['machine_id', 'due_at']).execute(), [{ machine_id: 2, due_at: T0 + 5 }]);
        const jobs = await app.store.db.selectFrom('jobs').select(['kind', 'due_at']).where('kind', 'in', ['instance.boot', JOB_SIM_STEP]).execute();
        assert.deepEqual(jobs, [{ kind: JOB_SIM_STEP, due_at: T0 + 5 }]);
        const columns = Object.keys((await sql`select * from instances`.execute(app.store.db)).rows[0] as object);
        assert.ok(!columns.includes('boot_step_at') && !columns.includes('boot_running_at'), columns.join(', '));

        await app.advance(BOOT_MAX_S);
        assert.equal((await statusOf(app, booting.id)).actual_status, 'running');
        const kept = await statusOf(app, running.id);
        assert.equal(kept.actual_status, 'running');
        assert.deepEqual(kept.ports, PORTS);
        assert.equal((await app.store.db.selectFrom('instance_events').select('id').where('instance_id', '=', running.id).execute()).length, 3, 'not booted again');
      } finally {
        await app.close();
      }
    } finally {
      await p.remove();
    }
  });
}
