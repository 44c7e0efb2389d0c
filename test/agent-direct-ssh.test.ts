/**
 * direct-ssh.ts: the agent listens on the host port of each running SSH container's 22/tcp and hands every connection
 * to the data plane as the `ssh` target of that instance; it stops listening when the container stops. (Real OpenSSH
 * through it into busybox and into an sshd image: test/ssh-direct-busybox-e2e.test.ts, test/ssh-direct-e2e.test.ts.)
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, createServer, type Socket } from 'node:net';
import { once } from 'node:events';
import { silentLog } from '../src/agent/agent-log.js';
import { createDirectSsh } from '../src/agent/direct-ssh.js';
import type { RuntimeContainer } from '../src/agent/runtime.js';
import type { TunnelTarget } from '../src/protocol/tunnel-targets.js';

async function freePort(): Promise<number> {
  const s = createServer().listen(0, '127.0.0.1');
  await once(s, 'listening');
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

const container = (instanceId: number, status: string, hostPort: number | null): RuntimeContainer => ({
  id: `c${instanceId}`, name: `c${instanceId}`, instanceId, generation: 1, status, exitCode: null, finishedAt: null,
  boundHostPorts: hostPort ? [hostPort] : [], ports: {}, sshHostPort: hostPort ? { hostIp: '127.0.0.1', hostPort } : null,
});

async function exchange(port: number, text: string, tries = 50): Promise<string> {
  const s = connect(port, '127.0.0.1');
  try {
    await once(s, 'connect');
  } catch (err) {
    // The listener opens on the next turn of the event loop after sync().
    if (tries <= 1 || (err as NodeJS.ErrnoException).code !== 'ECONNREFUSED') throw err;
    await new Promise((r) => setTimeout(r, 20));
    return exchange(port, text, tries - 1);
  }
  s.end(text);
  const chunks: Buffer[] = [];
  for await (const c of s) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString();
}

test('each running SSH container\'s host port reaches the data plane as its instance\'s ssh target; a stopped one is closed', async () => {
  const seen: { target: TunnelTarget; source: string }[] = [];
  const direct = createDirectSsh({
    log: silentLog,
    handle: async (target, stream, info) => {
      seen.push({ target, source: info.source });
      const socket = stream as Socket;
      const body: Buffer[] = [];
      socket.on('data', (c: Buffer) => body.push(c));
      await once(socket, 'end'); // (not for await: it would destroy the socket at the end of input)
      socket.end(`instance ${(target as { instanceId: number }).instanceId} got ${Buffer.concat(body).toString()}`);
      return {};
    },
  });
  try {
    const [p1, p2] = [await freePort(), await freePort()];
    direct.sync([container(1, 'running', p1), container(2, 'running', p2), container(3, 'running', null), container(4, 'exited', await freePort())]);
    assert.deepEqual([...direct.listening()].sort(), [[1, `127.0.0.1:${p1}`], [2, `127.0.0.1:${p2}`]]);
    assert.equal(await exchange(p1, 'hello'), 'instance 1 got hello');
    assert.equal(await exchange(p2, 'there'), 'instance 2 got there');
    assert.deepEqual(seen.map((s) => s.target), [{ kind: 'ssh', instanceId: 1 }, { kind: 'ssh', instanceId: 2 }]);
    assert.match(seen[0].source, /^127\.0\.0\.1:\d+$/);

    // Instance 1 stopped: its port is let go (and can be bound again), instance 2 keeps its listener.
    direct.sync([container(1, 'exited', p1), container(2, 'running', p2)]);
    assert.deepEqual([...direct.listening()], [[2, `127.0.0.1:${p2}`]]);
    await assert.rejects(exchange(p1, 'x', 1), /ECONNREFUSED/);
    assert.equal(await exchange(p2, 'again'), 'instance 2 got again');
  } finally {
    direct.close();
  }
  assert.deepEqual([...direct.listening()], []);
  // A listing that arrives after the stop (a reconcile pass in flight) opens nothing: the agent's process can exit.
  direct.sync([container(5, 'running', await freePort())]);
  assert.deepEqual([...direct.listening()], []);
});
