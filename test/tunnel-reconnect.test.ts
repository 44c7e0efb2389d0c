// The agent tunnel's life: a newer tunnel of a machine replaces the older, the agent comes back by itself after the
// server drops its tunnel and after the server restarts (a new app on the same database and port), and a stream then
// goes through again. The real agent-side client against test apps listening on ports.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DIALECTS, dropSchema, uniqueSchema } from './helpers/harness.js';
import { agentTunnel, fakePlane, listeningApp, machineOn, roundTrip, steadyPort, until, type TunnelServer } from './tunnel-fixtures.js';

async function echoes(server: TunnelServer, machineId: number, instanceId: number): Promise<void> {
  const s = await server.app.services.tunnels.api.open(machineId, { kind: 'ssh', instanceId }, { source: '198.51.100.1:22' });
  const { back, end } = await roundTrip(s, [Buffer.from(`ping ${instanceId}`)]);
  assert.equal(back.text, `ping ${instanceId}`);
  assert.equal(end.auth, 'ok');
}

const holds = (server: TunnelServer, machineId: number) => () => server.app.services.tunnels.held().includes(machineId);

for (const dialect of DIALECTS) {
  test(`[${dialect}] a second tunnel of the same machine replaces the first: new streams reach the newer agent`, async () => {
    const server = await listeningApp(dialect);
    const first = fakePlane();
    const second = fakePlane();
    const host = await machineOn(server.app);
    // The first agent waits long before trying again, so the second keeps the machine for the test.
    const a = agentTunnel(server.url, host.machineKey, first.handler, { backoff: { firstMs: 120_000, maxMs: 120_000 } });
    let b: ReturnType<typeof agentTunnel> | undefined;
    try {
      await until(() => a.connected(), 'the first tunnel');
      await until(holds(server, host.machineId), 'the server to hold it');
      await echoes(server, host.machineId, 1);
      assert.equal(first.seen.length, 1);

      b = agentTunnel(server.url, host.machineKey, second.handler);
      await until(() => b!.connected(), 'the second tunnel');
      await until(() => !a.connected(), 'the first tunnel to be closed by the server');
      await echoes(server, host.machineId, 2);
      await echoes(server, host.machineId, 3);
      assert.deepEqual(second.seen.map((s) => s.target).slice(-2), ['ssh.2', 'ssh.3']);
      assert.equal(first.seen.some((s) => s.target !== 'ssh.1'), false);
      assert.deepEqual(server.app.services.tunnels.held(), [host.machineId]);
    } finally {
      await a.stop();
      await b?.stop();
      await server.app.close();
    }
  });

  test(`[${dialect}] the agent reconnects by itself after the server drops its tunnel`, async () => {
    const server = await listeningApp(dialect);
    const plane = fakePlane();
    const host = await machineOn(server.app);
    const agent = agentTunnel(server.url, host.machineKey, plane.handler);
    try {
      await until(holds(server, host.machineId), 'the tunnel');
      await echoes(server, host.machineId, 1);
      server.app.services.tunnels.drop(host.machineId);
      await until(() => agent.connects >= 2, 'the agent to connect again');
      await until(holds(server, host.machineId), 'the tunnel again');
      await echoes(server, host.machineId, 2);
    } finally {
      await agent.stop();
      await server.app.close();
    }
  });

  test(`[${dialect}] the agent reconnects after the server restarts, and streams go through again`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpuplane-tunnel-restart-'));
    const schema = dialect === 'postgres' ? uniqueSchema() : undefined;
    const options = dialect === 'postgres' ? { pgSchema: schema } : { config: { GPUPLANE_DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}` } };
    let server = await listeningApp(dialect, { ...options, port: await steadyPort() });
    const plane = fakePlane();
    const host = await machineOn(server.app);
    const agent = agentTunnel(server.url, host.machineKey, plane.handler);
    try {
      await until(holds(server, host.machineId), 'the tunnel');
      await echoes(server, host.machineId, 1);
      const port = server.port;
      await server.app.close();
      await until(() => !agent.connected(), 'the agent to see the server go');
      server = await listeningApp(dialect, { ...options, port });
      await until(holds(server, host.machineId), 'the tunnel to the restarted server', 15_000);
      await echoes(server, host.machineId, 2);
    } finally {
      await agent.stop();
      await server.app.close();
      if (schema) await dropSchema(schema);
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
