/**
 * The agent's data plane (issue 31): what a stream from the server's tunnel, or a direct connection, leads to on this
 * host. Targets (src/protocol/tunnel-targets.ts), each for one of this agent's own instances only (its containers are
 * found by the owner's labels, container-access.ts; the instance must be in the latest desired state):
 *
 * - `ssh`: the image's own sshd when the image has one (asked once per container, waited for while it starts),
 *   on port 22 (from the host, on the instance's own network): the stream is spliced to it, SSH stays end to end.
 *   Else the agent's own SSH server (ssh/ssh-server.ts).
 * - `agent-ssh`: always the agent's own SSH server (copy's `vastai_kaalia` user lives only there).
 * - `tcp`: spliced to the container's address and port.
 * - `rsync`: the host's rsync daemon on the stream itself, one module named after the instance (ssh/rsync-daemon.ts).
 * - `terminal`: root's login shell in the container on a TTY, in terminal-wire.ts's frames (terminal.ts; the console's
 *   terminal, issue 32).
 *
 * A target that cannot be served is refused before the stream is touched: `handle` rejects with a StreamRefusal
 * (404: not this agent's instance; 502: its container is not running, or the port is closed), whose reason is a
 * sentence for the renter; the tunnel answers it as its status and `x-gpuplane-reason`.
 *
 * Keys: the own server checks each login against the instance's keys in the latest desired state (`instances()`), so
 * attach and detach act on the next login; `keysChanged()` (called on each desired state) also ends open own-server
 * connections whose key was detached, and rewrites /root/.ssh/authorized_keys in the running containers of SSH
 * runtypes whose keys changed, so an image's own sshd follows attach/detach too.
 */
import { connect as netConnect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type Dockerode from 'dockerode';
import type { TunnelStreamEnd, TunnelStreamInfo, TunnelTarget } from '../protocol/tunnel-targets.js';
import type { AgentLog } from './agent-log.js';
import type { ContainerOwner } from './runtime.js';
import { createDockerContainerAccess, type ContainerAccess, type ExecProcess, type InstanceContainer } from './ssh/container-access.js';
import { serveTerminal, startTerminalShell, type TerminalSession } from './terminal.js';
import { instanceHostKey } from './ssh/host-keys.js';
import { startRsyncDaemon } from './ssh/rsync-daemon.js';
import { keyListed, serveSsh, type LiveSshConnection } from './ssh/ssh-server.js';
import { syncAuthorizedKeys, type WrittenKeys } from './ssh/authorized-keys.js';

/** How long one try of the container's port 22 waits. */
const SSHD_PROBE_TIMEOUT_MS = 1500;
/** How long the `ssh` target waits for an image's sshd to start listening, retrying every SSHD_RETRY_MS. */
const SSHD_START_WAIT_MS = 30_000;
const SSHD_RETRY_MS = 250;
/** Containers whose sshd answer is remembered (the oldest forgotten first). */
const SSHD_MEMO_MAX = 4096;
/** Bytes of the container's output a splice lets queue in the tunnel stream before it pauses reading the container. */
const SPLICE_IN_FLIGHT = 4 * 1024 * 1024;
/** How long a `tcp` target waits for the container's port. */
const TCP_CONNECT_TIMEOUT_MS = 5000;

/** An instance of the latest desired state, as the data plane needs it. */
export interface DataPlaneInstance {
  /** Account keys and attached keys, one `type base64 [comment]` line each. */
  sshKeys: readonly string[];
  /** `ssh` and `jupyter` get authorized_keys rewritten on a key change; `args` images are left alone. */
  runtype: 'args' | 'ssh' | 'jupyter';
}

export interface AgentDataPlaneDeps {
  /** The agent's Docker client and owner (its containers only); or `access` instead (tests). */
  docker?: Dockerode;
  owner?: ContainerOwner;
  access?: ContainerAccess;
  /** The agent's state directory: the instances' host keys live in `ssh-host-keys/`. */
  stateDir: string;
  /** The latest desired state's instances, by id. */
  instances(): ReadonlyMap<number, DataPlaneInstance>;
  log: AgentLog;
  /** Milliseconds (session durations in the log). @default Date.now */
  now?: () => number;
  /** The host's rsync. @default 'rsync' */
  rsyncPath?: string;
}

/** A target refused before the stream was used: the tunnel answers `status` with `reason`. */
export class StreamRefusal extends Error {
  constructor(
    readonly status: 404 | 502,
    readonly reason: string,
  ) {
    super(reason);
    this.name = 'StreamRefusal';
  }
}

export interface AgentDataPlane {
  handle(target: TunnelTarget, stream: Duplex, info: TunnelStreamInfo): Promise<TunnelStreamEnd>;
  /**
   * Call after each new desired state: ends own-server connections whose key is no longer listed (or whose instance
   * is gone), and brings the authorized_keys of running SSH containers up to date. Resolves when the files are written.
   */
  keysChanged(): Promise<void>;
  /** Ends every connection. */
  close(): void;
}

/** Connects to host:port, or null when nothing answers within `timeoutMs`. */
function tryConnect(host: string, port: number, timeoutMs: number): Promise<Socket | null> {
  return new Promise((resolve) => {
    const sock = netConnect({ host, port });
    const timer = setTimeout(() => {
      sock.destroy();
      resolve(null);
    }, timeoutMs);
    sock.once('connect', () => {
      clearTimeout(timer);
      sock.removeAllListeners('error');
      resolve(sock);
    });
    sock.once('error', () => {
      clearTimeout(timer);
      sock.destroy();
      resolve(null);
    });
  });
}

/**
 * Bytes both ways, each direction ending on its own (half-close), until both have ended; resolves then, without
 * waiting for `stream`'s 'close' (a tunnel stream closes only after its trailers, which follow this). An error on the
 * container's side ends the stream; an error on the stream's side destroys the socket.
 */
function splice(stream: Duplex, sock: Socket): Promise<void> {
  return new Promise((resolve) => {
    let ended = 0;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      resolve();
    };
    const oneEnded = () => {
      if (++ended === 2) finish();
    };
    stream.once('end', oneEnded);
    sock.once('end', oneEnded);
    sock.on('error', () => {
      if (!stream.writableEnded) stream.end();
      finish();
    });
    stream.on('error', () => {
      sock.destroy();
      finish();
    });
    sock.once('close', () => {
      if (!stream.writableEnded) stream.end();
      finish();
    });
    stream.once('close', () => {
      sock.destroy();
      finish();
    });
    stream.pipe(sock);
    // The container's bytes go into the tunnel stream with up to SPLICE_IN_FLIGHT of them queued, not pipe()'s 16 KiB
    // (the stream's high-water mark): with one 64 KiB read in flight at a time the copy waited a few event-loop turns
    // per read for HTTP/2 to send it, and a download through the tunnel ran at ~0.4x direct with both processes
    // mostly idle (issue 32's port-proxy bench).
    sock.on('data', (chunk: Buffer) => {
      if (stream.destroyed || stream.writableEnded) return;
      stream.write(chunk);
      if (stream.writableLength >= SPLICE_IN_FLIGHT) {
        sock.pause();
        stream.once('drain', () => sock.resume());
      }
    });
    sock.once('end', () => {
      if (!stream.destroyed && !stream.writableEnded) stream.end();
    });
  });
}

export function createAgentDataPlane(deps: AgentDataPlaneDeps): AgentDataPlane {
  const access = deps.access ?? (deps.docker && deps.owner ? createDockerContainerAccess(deps.docker, deps.owner) : null);
  if (!access) throw new Error('the data plane needs a Docker client and owner, or a container access');
  const now = deps.now ?? Date.now;
  const live = new Set<LiveSshConnection>();
  const spliced = new Set<Duplex>();
  const terminals = new Set<TerminalSession>();
  const written = new Map<number, WrittenKeys>();

  async function runningContainer(instanceId: number): Promise<InstanceContainer> {
    const c = await access!.find(instanceId);
    if (!c) throw new StreamRefusal(502, `instance ${instanceId} has no container on this host yet`);
    if (!c.running || !c.ip) throw new StreamRefusal(502, `instance ${instanceId} is not running`);
    return c;
  }

  /**
   * Whether the container's image has an sshd (the entrypoint starts it exactly then, container-spec.ts
   * keepAliveScript), asked once per container. The choice must not depend on timing: a connection made while the
   * image's sshd is still starting must not land on the agent's server instead, whose host key differs, or the
   * renter's known_hosts would see the key change on the next connection.
   */
  const sshdByContainer = new Map<string, Promise<boolean>>();
  function imageHasSshd(c: InstanceContainer): Promise<boolean> {
    let known = sshdByContainer.get(c.id);
    if (!known) {
      known = (async () => {
        const p = await access!.exec(c.id, { argv: ['/bin/sh', '-c', 'command -v sshd >/dev/null 2>&1'] });
        p.stdout.resume();
        p.stderr.resume();
        p.stdin.end();
        return (await p.exit) === 0;
      })().catch(() => false);
      sshdByContainer.set(c.id, known);
      if (sshdByContainer.size > SSHD_MEMO_MAX) sshdByContainer.delete(sshdByContainer.keys().next().value!);
    }
    return known;
  }

  /** The image's sshd, waited for while it starts (host keys made, then listening); null if it never answers. */
  async function connectSshd(c: InstanceContainer): Promise<Socket | null> {
    const until = now() + SSHD_START_WAIT_MS;
    for (;;) {
      const sock = await tryConnect(c.ip!, 22, SSHD_PROBE_TIMEOUT_MS);
      if (sock || now() >= until) return sock;
      await new Promise((r) => setTimeout(r, SSHD_RETRY_MS));
    }
  }

  function ownServer(instanceId: number, stream: Duplex, info: TunnelStreamInfo): Promise<TunnelStreamEnd> {
    return serveSsh(
      stream,
      {
        instanceId,
        source: info.source,
        hostKey: instanceHostKey(deps.stateDir, instanceId),
        keys: () => deps.instances().get(instanceId)?.sshKeys ?? null,
        container: () => access!.find(instanceId),
        access: access!,
        log: deps.log,
        now,
        rsyncPath: deps.rsyncPath,
      },
      (c, alive) => (alive ? live.add(c) : live.delete(c)),
    );
  }

  async function spliceTracked(stream: Duplex, sock: Socket): Promise<void> {
    spliced.add(stream);
    try {
      await splice(stream, sock);
    } finally {
      spliced.delete(stream);
    }
  }

  return {
    async handle(target, stream, info) {
      const id = target.instanceId;
      if (!deps.instances().has(id)) throw new StreamRefusal(404, `instance ${id} is not on this host`);
      const c = await runningContainer(id);
      switch (target.kind) {
        case 'ssh': {
          const sshd = (await imageHasSshd(c)) ? await connectSshd(c) : null;
          if (sshd) {
            const started = now();
            await spliceTracked(stream, sshd);
            deps.log.info({ instance_id: id, source: info.source, endpoint: 'image-sshd', duration_s: Math.round((now() - started) / 100) / 10 }, 'ssh session ended');
            return { endpoint: 'image-sshd' };
          }
          return ownServer(id, stream, info);
        }
        case 'agent-ssh':
          return ownServer(id, stream, info);
        case 'tcp': {
          const sock = await tryConnect(c.ip!, target.port, TCP_CONNECT_TIMEOUT_MS);
          if (!sock) throw new StreamRefusal(502, `port ${target.port} of instance ${id} is not open`);
          await spliceTracked(stream, sock);
          return { endpoint: 'tcp' };
        }
        case 'rsync': {
          const child = startRsyncDaemon(id, c.pid, deps.rsyncPath);
          const started = now();
          stream.on('error', () => child.kill('SIGTERM'));
          stream.once('close', () => child.kill('SIGTERM'));
          child.stdin!.on('error', () => undefined);
          stream.pipe(child.stdin!);
          child.stdout!.pipe(stream);
          child.stderr!.resume();
          const code = await new Promise<number | null>((resolve) => {
            child.once('error', () => resolve(null));
            child.once('close', (c2) => resolve(c2));
          });
          deps.log.info({ instance_id: id, source: info.source, endpoint: 'rsync', exit: code, duration_s: Math.round((now() - started) / 100) / 10 }, 'rsync session ended');
          return { endpoint: 'rsync', exit: String(code ?? 'none') };
        }
        case 'terminal': {
          let shell: ExecProcess;
          try {
            shell = await startTerminalShell(access!, c);
          } catch (err) {
            throw new StreamRefusal(502, `cannot start a shell in instance ${id}: ${(err as Error).message}`);
          }
          return serveTerminal(stream, shell, {
            instanceId: id, info, log: deps.log, now,
            track: (s, alive) => (alive ? terminals.add(s) : terminals.delete(s)),
          });
        }
      }
    },

    async keysChanged() {
      const instances = deps.instances();
      // A terminal of an instance no longer on this host ends (its container goes too; this is sooner).
      for (const t of [...terminals]) if (!instances.has(t.instanceId)) t.end('the instance is no longer on this host');
      for (const c of [...live]) {
        if (!c.keyBlob) continue;
        const inst = instances.get(c.instanceId);
        if (!inst) c.end('the instance is no longer on this host');
        else if (!keyListed(inst.sshKeys, c.keyBlob)) c.end('its key was detached');
      }
      await syncAuthorizedKeys(access!, instances, written, deps.log, now());
    },

    close() {
      for (const c of [...live]) c.end('the agent is stopping');
      for (const s of [...spliced]) s.destroy();
      for (const t of [...terminals]) t.end('the agent is stopping');
    },
  };
}
