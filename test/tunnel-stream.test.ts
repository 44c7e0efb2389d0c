// The agent tunnel end to end on one server process: the real agent-side client (src/agent/agent-tunnel.ts) against a
// test app listening on a port, a fake data plane behind it. Streams echo both ways, a large transfer arrives intact,
// trailers arrive, refusals carry the agent's reason, and the handshake refuses a bad machine key.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { TunnelError } from '../src/tunnels/tunnels-contract.js';
import { DIALECTS } from './helpers/harness.js';
import { agentTunnel, fakePlane, listeningApp, machineOn, pseudoRandom, roundTrip, sha256Of, until, type TunnelServer } from './tunnel-fixtures.js';
import type { Host } from './agent-server-fixtures.js';

for (const dialect of DIALECTS) {
  let server: TunnelServer;
  let host: Host;
  let plane: ReturnType<typeof fakePlane>;
  let tunnel: ReturnType<typeof agentTunnel>;
  const api = () => server.app.services.tunnels.api;

  before(async () => {
    server = await listeningApp(dialect);
    host = await machineOn(server.app);
    plane = fakePlane();
    tunnel = agentTunnel(server.url, host.machineKey, plane.handler);
    await until(() => server.app.services.tunnels.held().includes(host.machineId), 'the tunnel to be held');
  });
  after(async () => {
    await tunnel?.stop();
    await server?.app.close();
  });

  test(`[${dialect}] a stream to the agent echoes bytes both ways and ends with the agent's trailers`, async () => {
    assert.equal(await api().connected(host.machineId), true);
    const s = await api().open(host.machineId, { kind: 'ssh', instanceId: 7 }, { source: '203.0.113.7:51234' });
    const { back, end } = await roundTrip(s, [Buffer.from('hello through the tunnel\n')]);
    assert.equal(back.text, 'hello through the tunnel\n');
    assert.deepEqual(end, { auth: 'ok', user: 'root', bytes: '25' });
    assert.deepEqual(plane.seen.at(-1), { target: 'ssh.7', source: '203.0.113.7:51234' });
  });

  test(`[${dialect}] 50 MB echoed through the tunnel arrive intact`, { timeout: 180_000 }, async () => {
    const n = 50 * 1024 * 1024;
    const s = await api().open(host.machineId, { kind: 'ssh', instanceId: 8 }, { source: '203.0.113.7:1' });
    const { back, end } = await roundTrip(s, pseudoRandom(n, 42));
    assert.equal(back.bytes, n);
    assert.equal(back.sha256, sha256Of(pseudoRandom(n, 42)));
    assert.equal(end.bytes, String(n));
  });

  test(`[${dialect}] the agent's side may write first and end first: 20 MiB from the agent`, { timeout: 180_000 }, async () => {
    const s = await api().open(host.machineId, { kind: 'tcp', instanceId: 9, port: 20 }, { source: '203.0.113.7:2' });
    const { back, end } = await roundTrip(s, []);
    assert.equal(back.sha256, sha256Of(pseudoRandom(20 << 20, 20)));
    assert.deepEqual(end, { sent: String(20 << 20) });
  });

  test(`[${dialect}] many streams at once on one tunnel`, async () => {
    const results = await Promise.all(Array.from({ length: 20 }, async (_, i) => {
      const s = await api().open(host.machineId, { kind: 'ssh', instanceId: 100 + i }, { source: `203.0.113.8:${i}` });
      return roundTrip(s, pseudoRandom(256 * 1024 + i, i + 1));
    }));
    results.forEach(({ back }, i) => assert.equal(back.sha256, sha256Of(pseudoRandom(256 * 1024 + i, i + 1))));
  });

  test(`[${dialect}] 600 streams held open at once on one tunnel (idle sessions), each still answering`, async () => {
    const open = await Promise.all(Array.from({ length: 600 }, (_, i) =>
      api().open(host.machineId, { kind: 'ssh', instanceId: 1000 + i }, { source: `203.0.113.9:${i}` })));
    const firstBytes = await Promise.all(open.map((s, i) => new Promise<string>((resolve) => {
      s.stream.once('data', (d: Buffer) => resolve(d.toString()));
      s.stream.write(`#${i}`);
    })));
    firstBytes.forEach((text, i) => assert.equal(text, `#${i}`));
    const ends = await Promise.all(open.map((s) => {
      s.stream.resume();
      s.stream.end();
      return s.end;
    }));
    ends.forEach((end, i) => assert.equal(end.bytes, String(`#${i}`.length)));
  });

  test(`[${dialect}] the agent's refusals: TunnelError refused (404) and unreachable (502), each with the agent's reason`, async () => {
    await assert.rejects(api().open(host.machineId, { kind: 'agent-ssh', instanceId: 11 }, { source: 'x' }), (e: unknown) =>
      e instanceof TunnelError && e.code === 'refused' && e.message === 'instance 11 is not on this machine');
    await assert.rejects(api().open(host.machineId, { kind: 'rsync', instanceId: 12 }, { source: 'x' }), (e: unknown) =>
      e instanceof TunnelError && e.code === 'unreachable' && e.message === "instance 12's container is not running");
  });

  test(`[${dialect}] a machine without a tunnel: TunnelError not_connected`, async () => {
    const other = await machineOn(server.app);
    assert.equal(await api().connected(other.machineId), false);
    await assert.rejects(api().open(other.machineId, { kind: 'ssh', instanceId: 1 }, { source: 'x' }), (e: unknown) =>
      e instanceof TunnelError && e.code === 'not_connected');
  });

  test(`[${dialect}] the upgrade with a bad machine key is 401 with the API's error object, and holds nothing`, async () => {
    const reply = await new Promise<{ status: number; body: any; upgraded: boolean }>((resolve, reject) => {
      const req = request(`${server.url}/api/v0/agent/tunnel/`, {
        headers: { connection: 'Upgrade', upgrade: 'gpuplane-tunnel/1', authorization: 'Bearer gpm_not_a_machine_key_0123456789' },
      });
      req.on('upgrade', (_res, socket) => {
        socket.destroy();
        resolve({ status: 101, body: null, upgraded: true });
      });
      req.on('response', (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text), upgraded: false }));
      });
      req.on('error', reject);
      req.end();
    });
    assert.equal(reply.status, 401);
    assert.equal(reply.body.success, false);
    assert.equal(reply.body.error, 'auth_error');
    assert.equal(typeof reply.body.msg, 'string');
    assert.deepEqual(server.app.services.tunnels.held(), [host.machineId]);
  });

  test(`[${dialect}] the real client with a revoked key is told 401 (onRefused) and never connects`, async () => {
    const refused: string[] = [];
    const bad = agentTunnel(server.url, 'gpm_revoked_0123456789abcdef', plane.handler, { onRefused: (m) => refused.push(m) });
    try {
      await until(() => refused.length > 0, 'the refusal');
      assert.match(refused[0], /401/);
      assert.equal(bad.connected(), false);
      assert.equal(bad.connects, 0);
    } finally {
      await bad.stop();
    }
  });
}
