/**
 * Direct SSH (`ssh_direct`, `jupyter_direct`: the instance's `22/tcp` on the host's own address) into any image. The
 * agent, not Docker, holds the host port of an SSH instance's `22/tcp` (container-spec.ts `sshHostPort`), and hands
 * each connection to the data plane's `ssh` target, exactly as a stream through the tunnel: the image's own sshd when
 * it answers on port 22, else the agent's SSH server. So an image without sshd (busybox) is reachable directly too,
 * and a direct connection is checked against the same keys as a proxied one.
 *
 * Level-triggered like the reconcile: `sync` is given every listing of the machine's containers and listens on the
 * ports of the running ones, closing the rest. A connection already open stays until its container stops.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { TunnelStreamEnd, TunnelStreamInfo, TunnelTarget } from '../protocol/tunnel-targets.js';
import type { AgentLog } from './agent-log.js';
import type { RuntimeContainer } from './runtime.js';

export type StreamHandler = (target: TunnelTarget, stream: Socket, info: TunnelStreamInfo) => Promise<TunnelStreamEnd>;

interface Held {
  key: string;
  server: Server;
  sockets: Set<Socket>;
}

export function createDirectSsh(deps: { handle: StreamHandler; log: AgentLog }) {
  const held = new Map<number, Held>();
  /** Closed for good: a listing that arrives after the agent stopped (a reconcile pass in flight) opens nothing. */
  let closed = false;

  function close(instanceId: number): void {
    const h = held.get(instanceId);
    if (!h) return;
    held.delete(instanceId);
    h.server.close();
    for (const s of h.sockets) s.destroy();
  }

  function listen(instanceId: number, hostIp: string, hostPort: number): void {
    const sockets = new Set<Socket>();
    // Half-open kept: a client's end of input (scp, rsync) passes through to the far end, as a proxy must.
    const server = createServer({ allowHalfOpen: true }, (socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
      const source = `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? 0}`;
      deps.handle({ kind: 'ssh', instanceId }, socket, { source }).catch((err: Error) => {
        deps.log.warn({ instance_id: instanceId, source, err: err.message }, 'direct SSH connection failed');
        socket.destroy();
      });
    });
    server.on('error', (err) => {
      // Taken by another program: the next sync tries again (the port stays reserved for the container).
      deps.log.warn({ instance_id: instanceId, port: hostPort, err: err.message }, 'cannot listen for direct SSH');
      if (held.get(instanceId)?.server === server) held.delete(instanceId);
    });
    server.listen({ host: hostIp, port: hostPort, exclusive: true });
    held.set(instanceId, { key: `${hostIp}:${hostPort}`, server, sockets });
  }

  return {
    /** Listens for the running containers that hold an SSH port, and for no others. */
    sync(containers: readonly RuntimeContainer[]): void {
      if (closed) return;
      const wanted = new Map<number, { hostIp: string; hostPort: number }>();
      for (const c of containers) {
        if (c.instanceId !== null && c.status === 'running' && c.sshHostPort) wanted.set(c.instanceId, c.sshHostPort);
      }
      for (const [id, h] of held) {
        const w = wanted.get(id);
        if (!w || `${w.hostIp}:${w.hostPort}` !== h.key) close(id);
      }
      for (const [id, w] of wanted) if (!held.has(id)) listen(id, w.hostIp, w.hostPort);
    },
    /** The ports listened on now, by instance (tests). */
    listening(): Map<number, string> {
      return new Map([...held].map(([id, h]) => [id, h.key]));
    },
    close(): void {
      closed = true;
      for (const id of [...held.keys()]) close(id);
    },
  };
}

export type DirectSsh = ReturnType<typeof createDirectSsh>;
