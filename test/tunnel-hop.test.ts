// Two server processes on one database (two test apps in this process, each listening on its own port with its own
// hop URL): the agent's tunnel is held by A, a stream opened through B reaches the agent by a hop to A, with the
// agent's trailers and refusals carried back. The hop is authenticated: an upgrade without the cluster's HMAC, or one
// replayed, is refused. A holder row whose process is gone gives not_connected. On PostgreSQL (requirePostgres: the
// deployment this is for) and on one SQLite file shared by both apps.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cryptoRandom } from '../src/platform/random.js';
import { TunnelError } from '../src/tunnels/tunnels-contract.js';
import { hopAuth } from '../src/tunnels/tunnels-hop.js';
import type { DialectName } from '../src/platform/db/connect.js';
import { dropSchema, requirePostgres, uniqueSchema } from './helpers/harness.js';
import type { Host } from './agent-server-fixtures.js';
import { agentTunnel, fakePlane, listeningApp, machineOn, pseudoRandom, roundTrip, sha256Of, until, type TunnelServer } from './tunnel-fixtures.js';

/** A raw hop upgrade to `url` with the given auth header: the status the server answers (101 when it upgrades). */
function hopStatus(url: string, auth: string | undefined): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/api/v0/tunnels/hop/`, {
      headers: { connection: 'Upgrade', upgrade: 'gpuplane-hop/1', ...(auth ? { 'x-gpuplane-hop-auth': auth } : {}) },
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve(res.statusCode!);
    });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on('error', reject);
    req.end();
  });
}

for (const dialect of ['postgres', 'sqlite'] as DialectName[]) {
  describe(`[${dialect}] two server processes on one database`, () => {
    let a: TunnelServer;
    let b: TunnelServer;
    let host: Host;
    let schema: string | undefined;
    let dir: string | undefined;
    const plane = fakePlane();
    let tunnel: ReturnType<typeof agentTunnel>;

    before(async () => {
      let options;
      if (dialect === 'postgres') {
        requirePostgres();
        schema = uniqueSchema();
        options = { pgSchema: schema };
      } else {
        dir = mkdtempSync(join(tmpdir(), 'gpuplane-tunnel-hop-'));
        options = { config: { GPUPLANE_DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}` } };
      }
      a = await listeningApp(dialect, options);
      b = await listeningApp(dialect, options);
      host = await machineOn(a.app);
      tunnel = agentTunnel(a.url, host.machineKey, plane.handler);
      await until(() => a.app.services.tunnels.held().includes(host.machineId), 'A to hold the tunnel');
      await until(() => b.app.services.tunnels.connected(host.machineId), 'B to see the holder row');
    });
    after(async () => {
      await tunnel?.stop();
      await b?.app.close();
      await a?.app.close();
      if (schema) await dropSchema(schema);
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    test('B holds no tunnel, yet a stream opened through B reaches the agent (echo, 20 MB intact, trailers)', async () => {
      assert.deepEqual(b.app.services.tunnels.held(), []);
      const s = await b.app.services.tunnels.api.open(host.machineId, { kind: 'ssh', instanceId: 21 }, { source: '192.0.2.10:40000' });
      const n = 20 << 20;
      const { back, end } = await roundTrip(s, pseudoRandom(n, 5));
      assert.equal(back.sha256, sha256Of(pseudoRandom(n, 5)));
      assert.deepEqual(end, { auth: 'ok', user: 'root', bytes: String(n) });
      assert.deepEqual(plane.seen.at(-1), { target: 'ssh.21', source: '192.0.2.10:40000' });
    });

    test('several streams through B at once share one hop connection', async () => {
      const results = await Promise.all(Array.from({ length: 8 }, async (_, i) => {
        const s = await b.app.services.tunnels.api.open(host.machineId, { kind: 'ssh', instanceId: 30 + i }, { source: `192.0.2.11:${i}` });
        return roundTrip(s, [Buffer.from(`stream ${i}`)]);
      }));
      results.forEach(({ back }, i) => assert.equal(back.text, `stream ${i}`));
    });

    test('the agent\'s refusals come back through the hop with their code and reason', async () => {
      await assert.rejects(b.app.services.tunnels.api.open(host.machineId, { kind: 'agent-ssh', instanceId: 22 }, { source: 'x' }), (e: unknown) =>
        e instanceof TunnelError && e.code === 'refused' && e.message === 'instance 22 is not on this machine');
      await assert.rejects(b.app.services.tunnels.api.open(host.machineId, { kind: 'rsync', instanceId: 23 }, { source: 'x' }), (e: unknown) =>
        e instanceof TunnelError && e.code === 'unreachable' && e.message === "instance 23's container is not running");
    });

    test('a hop without the cluster\'s HMAC is refused (401), and a replayed signed one too; a fresh signed one upgrades', async () => {
      assert.equal(await hopStatus(a.url, undefined), 401);
      assert.equal(await hopStatus(a.url, hopAuth('not-the-cluster-secret', Date.now(), cryptoRandom)), 401);
      const secret = (await a.app.store.db.selectFrom('kv').select('value').where('key', '=', 'tunnels.hop_secret').executeTakeFirstOrThrow()).value;
      assert.equal(await hopStatus(a.url, hopAuth(secret, Date.now() - 10 * 60_000, cryptoRandom)), 401, 'a stale signature');
      const signed = hopAuth(secret, Date.now(), cryptoRandom);
      assert.equal(await hopStatus(a.url, signed), 101);
      assert.equal(await hopStatus(a.url, signed), 401, 'the same signature replayed');
    });

    test('a holder row whose process is gone: not_connected once the hop fails', async () => {
      const other = await machineOn(a.app);
      await a.app.store.db.insertInto('agent_tunnels')
        .values({ machine_id: other.machineId, process_id: 'gone-process', hop_url: 'http://127.0.0.1:1', connected_at: 0 }).execute();
      assert.equal(await b.app.services.tunnels.connected(other.machineId), true, 'the row alone says connected');
      await assert.rejects(b.app.services.tunnels.api.open(other.machineId, { kind: 'ssh', instanceId: 1 }, { source: 'x' }), (e: unknown) =>
        e instanceof TunnelError && e.code === 'not_connected');
    });

    test('the agent moves to B: B holds it, A reaches it by a hop, and A\'s old row is gone', async () => {
      await tunnel.stop();
      await until(async () => !(await b.app.services.tunnels.connected(host.machineId)), 'A to release its row');
      tunnel = agentTunnel(b.url, host.machineKey, plane.handler);
      await until(() => b.app.services.tunnels.held().includes(host.machineId), 'B to hold the tunnel');
      // B records itself as the holder just after taking the tunnel: A finds the row once it is written.
      await until(() => a.app.services.tunnels.connected(host.machineId), 'A to see B\'s holder row');
      const s = await a.app.services.tunnels.api.open(host.machineId, { kind: 'ssh', instanceId: 24 }, { source: 'x' });
      const { back } = await roundTrip(s, [Buffer.from('via A')]);
      assert.equal(back.text, 'via A');
    });
  });
}
