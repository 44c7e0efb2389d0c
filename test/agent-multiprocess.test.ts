// The agent protocol across server processes on one database: an agent long-polling one process hears of a change
// made through another within 1 s (the desired-state version is the database's, not a process's).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { DIALECTS } from './helpers/harness.js';
import { call, freshPgDatabase, serve, type Served } from './helpers/spawn.js';
import { hardware, registrationId } from './agent-server-fixtures.js';

const OWNER = 'gpk_agent_multi_owner_0123456789abcdef';

for (const dialect of DIALECTS) {
  test(`a change made through one ${dialect} process reaches an agent long-polling another within 1 s`, async (t) => {
    let dir: string | undefined;
    let pg: Awaited<ReturnType<typeof freshPgDatabase>> | undefined;
    let url: string;
    if (dialect === 'postgres') {
      pg = await freshPgDatabase();
      url = pg.url;
    } else {
      dir = mkdtempSync(join(tmpdir(), 'gpuplane-agent-multi-'));
      url = `sqlite:${join(dir, 'db.sqlite')}`;
    }
    const env = { GPUPLANE_DATABASE_URL: url, GPUPLANE_BOOTSTRAP_API_KEY: OWNER, GPUPLANE_SECRET_KEY: 'multi-secret-key-0123456789', GPUPLANE_SIM_MACHINES: '3' };
    const servers: Served[] = [];
    try {
      servers.push(await serve(env));
      servers.push(await serve(env));
      const [a, b] = servers.map((s) => s.url);
      const host = (await call(a, 'POST', '/_emu/users', OWNER, { email: 'host@example.com' })).body.api_key;
      const renter = (await call(b, 'POST', '/_emu/users', OWNER, { email: 'renter@example.com' })).body.api_key;
      const reg = await call(a, 'POST', '/api/v0/machines/register/', host, { registration_id: registrationId(), agent_version: '1', hardware: hardware() });
      assert.equal(reg.status, 200, JSON.stringify(reg.body));
      const { machine_id: machineId, machine_key: machineKey } = reg.body;
      assert.equal((await call(b, 'PUT', '/api/v0/machines/create_asks/', host, { machine: machineId, price_gpu: 0.4 })).status, 200);
      const first = await call(a, 'GET', '/api/v0/agent/desired/', machineKey);
      assert.equal(first.status, 200);

      const held = call(a, 'GET', `/api/v0/agent/desired/?after=${first.body.version}&wait=30`, machineKey).then((r) => ({ r, at: performance.now() }));
      const rented = await call(b, 'PUT', `/api/v0/asks/${machineId * 100 + 1}/`, renter, { image: 'busybox' });
      assert.equal(rented.status, 200, JSON.stringify(rented.body));
      const changedAt = performance.now();
      const { r, at } = await held;
      assert.equal(r.status, 200);
      assert.notEqual(r.body.version, first.body.version);
      assert.deepEqual(r.body.instances.map((i: any) => i.instance_id), [rented.body.new_contract]);
      t.diagnostic(`desired-state change reached the agent ${Math.round(at - changedAt)} ms after it committed`);
      assert.ok(at - changedAt < 1000, `the change took ${Math.round(at - changedAt)} ms to reach the agent`);

      // Reports through the other process drive the same instance.
      const boot = r.body.instances[0].boot;
      const observed = [{ instance_id: rented.body.new_contract, generation: 1, boot, state: 'running', container_id: 'c1', exit_code: null, ports: {}, error: null }];
      const st = await call(b, 'PUT', '/api/v0/agent/status/', machineKey, { agent_version: '1', desired_version: r.body.version, observed });
      assert.equal(st.status, 200, JSON.stringify(st.body));
      assert.equal(st.body.desired_version, r.body.version);
      const shown = await call(a, 'GET', `/api/v0/instances/${rented.body.new_contract}/`, renter);
      assert.equal(shown.body.instances.actual_status, 'running');
    } finally {
      for (const s of servers) await s.stop();
      await pg?.drop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    }
  });
}
