// The tunnel's keepalive finds a connection that died silently (a NAT that forgot it, a host that froze), on both
// ends: the server closes a tunnel whose agent stops answering its PINGs, and the agent, hearing no PING for three of
// the intervals the 101 announced, drops the connection and dials again. Short intervals here; 15 s in service.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request, type IncomingMessage } from 'node:http';
import { connect } from 'node:http2';
import type { Socket } from 'node:net';
import { pino } from 'pino';
import { silentLog } from '../src/agent/agent-log.js';
import { startAgentTunnel } from '../src/agent/agent-tunnel.js';
import { cryptoRandom } from '../src/platform/random.js';
import { tunnelsServiceFactory } from '../src/tunnels/tunnels-service.js';
import { tunnelsUpgrade } from '../src/tunnels/tunnels-upgrade.js';
import { createTestApp } from './helpers/harness.js';
import { fakePlane, until } from './tunnel-fixtures.js';

test('the server closes a tunnel whose agent stops answering its PINGs', async () => {
  const app = await createTestApp('sqlite');
  const log = pino({ level: 'silent' });
  const tunnels = tunnelsServiceFactory({
    db: app.store.db, clock: app.clock, random: cryptoRandom, log, authenticate: async () => 7, hopUrl: undefined, listenHost: '127.0.0.1', pingIntervalMs: 200,
  });
  const server = createServer();
  server.on('upgrade', tunnelsUpgrade(tunnels, log, () => false));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  let frozen: Socket | undefined;
  try {
    // An "agent" that upgrades, then freezes: it never reads again, so no PING is answered.
    frozen = await new Promise<Socket>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/api/v0/agent/tunnel/', headers: { connection: 'Upgrade', upgrade: 'gpuplane-tunnel/1', authorization: 'Bearer k' } });
      req.on('upgrade', (_res: IncomingMessage, socket: Socket) => {
        socket.pause();
        resolve(socket);
      });
      req.on('error', reject);
      req.end();
    });
    await until(() => tunnels.held().includes(7), 'the tunnel to be held');
    await until(() => !tunnels.held().includes(7), 'the server to close the silent tunnel', 5000);
  } finally {
    frozen?.destroy();
    await tunnels.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await app.close();
  }
});

test('the agent drops a tunnel that brings no PING for three intervals, and dials again', async () => {
  // A server that upgrades and speaks HTTP/2, announces PINGs every 0.2 s, and never sends one.
  const sockets: Socket[] = [];
  let upgrades = 0;
  const server = createServer();
  server.on('upgrade', (_req, socket: Socket) => {
    upgrades++;
    sockets.push(socket);
    socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: gpuplane-tunnel/1\r\nx-gpuplane-ping-interval: 0.2\r\n\r\n');
    const h2 = connect('http://agent.invalid', { createConnection: () => socket });
    h2.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const agent = startAgentTunnel({ url, machineKey: 'k', handler: fakePlane().handler, log: silentLog, backoff: { firstMs: 50, maxMs: 100 } });
  try {
    await until(() => upgrades >= 1 && agent.connected(), 'the first tunnel');
    await until(() => upgrades >= 2, 'the agent to drop the silent tunnel and dial again', 5000);
    assert.ok(sockets[0].destroyed || sockets[0].readableEnded, 'the first connection is closed');
  } finally {
    await agent.stop();
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});
