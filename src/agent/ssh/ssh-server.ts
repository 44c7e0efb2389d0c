/**
 * The agent's own SSH server for one instance, fed one stream at a time (a tunnel stream or a direct connection; it
 * never listens on a port). Built on `ssh2`, the maintained pure-JS SSH library, because it lets the agent be the SSH
 * endpoint of ANY image: the image needs no sshd, no scp, no rsync. Each session is bridged into the container:
 *
 * - auth: public key only, checked against the instance's keys at that very moment (the agent's latest desired
 *   state: account keys and attached keys), so an attached key works and a detached one is refused at the next try;
 *   the data plane also ends open connections whose key was detached (agent-data-plane.ts `keysChanged`).
 * - user `vastai_kaalia` (copy): only `rsync --server --daemon .`, served by the host's rsync (rsync-daemon.ts).
 *   Any other user name is root (the vastai client always says root).
 * - shell and exec: `docker exec` of root's login shell, with a TTY when one was asked for (its size set before the
 *   command runs, resized on window-change), else plain pipes; the exit status goes back. As with an image's sshd, the session does not see
 *   the container's environment (CONTAINER_API_KEY and the rest), only /etc/environment's variables.
 * - `sftp`: sftp-server.ts, every file operation inside the container.
 * - `direct-tcpip` (ssh -L): to the container's own address, for `localhost` or that address only (a service bound to
 *   the container's loopback alone is reached through `nc` inside it); other destinations are refused (the agent's
 *   host must not become a renter's jump host).
 *
 * A host key per instance (host-keys.ts). Keys are never logged; each session is, at info: instance, user, source,
 * duration.
 */
import { connect as netConnect, isIP } from 'node:net';
import type { Duplex } from 'node:stream';
import type { AuthContext, Connection, ParsedKey, ServerChannel, Session } from 'ssh2';
import type { AgentLog } from '../agent-log.js';
import type { TunnelStreamEnd } from '../../protocol/tunnel-targets.js';
import type { ContainerAccess, ExecProcess, InstanceContainer } from './container-access.js';
import { ContainerFiles } from './container-files.js';
import { serveSftp } from './sftp-server.js';
import { isRsyncDaemonCommand, startRsyncDaemon } from './rsync-daemon.js';
import { ssh2 } from './ssh2-lib.js';
import { loginShellArgv, SESSION_PATH } from './login-shell.js';

/** The login name `vastai copy` uses for the rsync daemon. */
export const COPY_USER = 'vastai_kaalia';

/** Variables a client may send (OpenSSH's usual AcceptEnv). */
const ACCEPTED_ENV = /^(LANG|LC_[A-Z_]+|TERM|COLORTERM)$/;

export interface SshServeContext {
  instanceId: number;
  source: string;
  /** The instance's host key (OpenSSH private key text). */
  hostKey: string;
  /** The instance's keys now, or null when it is no longer the agent's. */
  keys(): readonly string[] | null;
  /** The instance's container now. */
  container(): Promise<InstanceContainer | null>;
  access: ContainerAccess;
  log: AgentLog;
  now(): number;
  rsyncPath?: string;
}

/** A live connection of the own server, as the data plane tracks it (to end it when its key is detached). */
export interface LiveSshConnection {
  instanceId: number;
  /** The accepted key's public blob (base64), once authenticated. */
  keyBlob: string | null;
  end(reason: string): void;
}

const parsedKeys = new Map<string, ParsedKey | null>();

/** A key line (`ssh-ed25519 AAAA… comment`) parsed once; null when it is not a public key. */
function parsed(line: string): ParsedKey | null {
  const known = parsedKeys.get(line);
  if (known !== undefined) return known;
  const r = ssh2().utils.parseKey(line.trim()) as ParsedKey | ParsedKey[] | Error;
  const k = r instanceof Error ? null : Array.isArray(r) ? (r[0] ?? null) : r;
  if (parsedKeys.size > 10_000) parsedKeys.clear();
  parsedKeys.set(line, k);
  return k;
}

/** The listed key with this public blob, if any. */
export function findKey(keys: readonly string[], blob: Buffer): ParsedKey | null {
  for (const line of keys) {
    const k = parsed(line);
    if (k && k.getPublicSSH().equals(blob)) return k;
  }
  return null;
}

/** Whether a key with this public blob (base64) is still listed. */
export function keyListed(keys: readonly string[], blobBase64: string): boolean {
  return findKey(keys, Buffer.from(blobBase64, 'base64')) !== null;
}

/** `localhost` and the container's own address mean the container; anything else is refused. */
export function forwardTarget(destIP: string, container: InstanceContainer): string | null {
  if (!container.ip) return null;
  const local = ['localhost', 'ip6-localhost', '127.0.0.1', '::1', '0.0.0.0', '::'];
  if (local.includes(destIP.toLowerCase()) || destIP === container.ip) return container.ip;
  if (isIP(destIP) === 4 && destIP.startsWith('127.')) return container.ip;
  return null;
}

/**
 * Serves one SSH connection on `stream`; resolves with the trailers once it is over. `track` is told of the live
 * connection when it starts and when it ends.
 */
export function serveSsh(stream: Duplex, ctx: SshServeContext, track: (c: LiveSshConnection, alive: boolean) => void): Promise<TunnelStreamEnd> {
  const { Server } = ssh2();
  const started = ctx.now();
  let auth: 'none' | 'failed' | 'ok' = 'none';
  let user: string | null = null;
  const live: LiveSshConnection = { instanceId: ctx.instanceId, keyBlob: null, end: () => undefined };
  const procs = new Set<{ destroy(): void; hangup?(): Promise<void> }>();
  /** A session's process when its session or connection ends: hung up (as sshd does), then let go. */
  const hangUp = async (p: { destroy(): void; hangup?(): Promise<void> }) => {
    procs.delete(p);
    await p.hangup?.().catch(() => undefined);
    p.destroy();
  };

  return new Promise<TunnelStreamEnd>((resolve) => {
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      for (const p of procs) void hangUp(p);
      track(live, false);
      const end: TunnelStreamEnd = { endpoint: 'agent', auth };
      if (user !== null) end.user = user;
      ctx.log.info(
        { instance_id: ctx.instanceId, user: user ?? undefined, source: ctx.source, auth, duration_s: Math.round((ctx.now() - started) / 100) / 10 },
        'ssh session ended',
      );
      resolve(end);
    };

    const server = new Server({ hostKeys: [ctx.hostKey], ident: 'gpuplane-agent' }, (client: Connection) => {
      live.end = (reason: string) => {
        ctx.log.info({ instance_id: ctx.instanceId, source: ctx.source, reason }, 'ssh connection ended by the agent');
        client.end();
      };
      track(live, true);
      client.on('error', () => undefined);
      client.on('close', finish);
      client.on('authentication', (a: AuthContext) => authenticate(a));
      client.on('ready', () => {
        ctx.log.info({ instance_id: ctx.instanceId, user, source: ctx.source }, 'ssh session started');
        client.on('session', (accept) => serveSession(accept(), user === COPY_USER));
        client.on('tcpip', (accept, reject, info) => {
          if (user === COPY_USER) return reject();
          void forward(accept, reject, info.destIP, info.destPort);
        });
        client.on('request', (accept, reject) => reject?.());
      });
    });
    server.on('error', () => undefined);

    function authenticate(a: AuthContext): void {
      const name = a.username === COPY_USER ? COPY_USER : 'root';
      if (a.method !== 'publickey') return a.reject(['publickey']);
      const keys = ctx.keys();
      const key = keys ? findKey(keys, a.key.data) : null;
      if (!key) {
        if (auth !== 'ok') auth = 'failed';
        return a.reject(['publickey']);
      }
      // Without a signature the client only asks whether the key would do.
      if (!a.signature) return a.accept();
      if (key.verify(a.blob!, a.signature, a.hashAlgo) !== true) {
        auth = 'failed';
        return a.reject(['publickey']);
      }
      auth = 'ok';
      user = name;
      live.keyBlob = a.key.data.toString('base64');
      a.accept();
    }

    async function forward(accept: () => ServerChannel, reject: () => void, destIP: string, destPort: number): Promise<void> {
      const c = await ctx.container().catch(() => null);
      const host = c?.running ? forwardTarget(destIP, c) : null;
      if (!c || !host) return reject();
      const sock = netConnect({ host, port: destPort });
      sock.once('error', () => {
        // Nothing on the container's address: a service bound to its loopback only is reached from inside, through
        // the image's `nc` (busybox has one), when the renter named localhost.
        if (destIP === host) return reject();
        void forwardInside(accept, reject, c, destPort);
      });
      sock.once('connect', () => {
        sock.removeAllListeners('error');
        const ch = accept();
        procs.add(sock);
        sock.on('error', () => ch.destroy());
        ch.on('error', () => sock.destroy());
        ch.pipe(sock).on('close', () => procs.delete(sock));
        sock.pipe(ch);
      });
    }

    async function forwardInside(accept: () => ServerChannel, reject: () => void, c: InstanceContainer, destPort: number): Promise<void> {
      let p: ExecProcess;
      try {
        p = await ctx.access.exec(c.id, { argv: ['nc', '127.0.0.1', String(destPort)] });
      } catch {
        return reject();
      }
      const ch = accept();
      procs.add(p);
      ch.pipe(p.stdin);
      ch.on('close', () => void hangUp(p));
      p.stdin.on('error', () => undefined);
      p.stdout.pipe(ch);
      p.stderr.resume();
      void p.exit.then(() => procs.delete(p));
    }

    function serveSession(session: Session, copyUser: boolean): void {
      let pty: { term: string; rows: number; cols: number } | null = null;
      const env: string[] = [];
      let proc: ExecProcess | null = null;
      /** Settles once every window change asked for so far is applied. */
      let resizing: Promise<void> = Promise.resolve();

      session.on('pty', (accept, reject, info) => {
        if (copyUser) return reject?.();
        pty = { term: info.term || 'xterm', rows: info.rows, cols: info.cols };
        accept?.();
      });
      session.on('window-change', (accept, _reject, info) => {
        if (pty) {
          pty.rows = info.rows;
          pty.cols = info.cols;
        }
        // Input sent after the change waits for Docker to apply it, keeping SSH's order (`stty size` typed after a
        // resize sees the new size).
        if (proc) {
          const p = proc;
          resizing = resizing.then(() => p.resize(info.rows, info.cols));
        }
        accept?.();
      });
      session.on('env', (accept, reject, info) => {
        if (!ACCEPTED_ENV.test(info.key)) return reject?.();
        env.push(`${info.key}=${info.val}`);
        accept?.();
      });
      session.on('signal', (accept) => accept?.());
      session.on('auth-agent', (_a, reject) => reject?.());
      session.on('x11', (_a, reject) => reject?.());
      session.on('subsystem', (_a, reject) => reject?.());

      session.on('shell', (accept, reject) => {
        if (copyUser) return reject?.();
        void run(accept(), 'shell', '');
      });
      session.on('exec', (accept, reject, info) => {
        if (copyUser) {
          if (!isRsyncDaemonCommand(info.command)) return reject?.();
          void rsync(accept());
          return;
        }
        void run(accept(), 'exec', info.command);
      });
      session.on('sftp', (accept, reject) => {
        if (copyUser) return reject?.();
        // Accepted at once: the client's first packet follows the request without waiting for the answer.
        const containerId = ctx.container().then((c) => {
          if (!c?.running) throw new Error(`instance ${ctx.instanceId} is not running`);
          return c.id;
        });
        serveSftp(accept(), new ContainerFiles(ctx.access, containerId), (err) =>
          ctx.log.warn({ instance_id: ctx.instanceId, err: err.message }, 'sftp operation failed'));
      });

      async function running(ch: ServerChannel | null): Promise<InstanceContainer | null> {
        const c = await ctx.container().catch(() => null);
        if (c?.running) return c;
        if (ch) {
          ch.stderr.write(`instance ${ctx.instanceId} is not running\r\n`);
          ch.exit(1);
          ch.end();
        }
        return null;
      }

      async function run(ch: ServerChannel, mode: 'shell' | 'exec', command: string): Promise<void> {
        const c = await running(ch);
        if (!c) return;
        const tty = pty !== null;
        // What sshd tells a session; SSH_CLIENT also makes bash read ~/.bashrc for a command, as under sshd.
        const [srcAddr, srcPort] = splitSource(ctx.source);
        const vars = [
          'HOME=/root', 'USER=root', 'LOGNAME=root', `PATH=${SESSION_PATH}`,
          `SSH_CLIENT=${srcAddr} ${srcPort} 22`, `SSH_CONNECTION=${srcAddr} ${srcPort} ${c.ip ?? '0.0.0.0'} 22`, ...env,
        ];
        if (pty) vars.push(`TERM=${pty.term}`);
        let p: ExecProcess;
        try {
          p = await ctx.access.exec(c.id, {
            argv: loginShellArgv({ mode, vars, rows: pty?.rows, cols: pty?.cols, command }),
            tty,
          });
        } catch (err) {
          ch.stderr.write(`cannot start a process in instance ${ctx.instanceId}: ${(err as Error).message}\r\n`);
          ch.exit(126);
          ch.end();
          return;
        }
        proc = p;
        procs.add(p);
        // Input in order, after any window change asked before it; a full stdin holds the channel back. A TTY has no
        // end of input to pass on (Docker would drop the whole exec); sshd keeps it open too.
        let writing: Promise<void> = Promise.resolve();
        ch.on('data', (d: Buffer) => {
          const before = resizing;
          ch.pause();
          writing = writing.then(async () => {
            await before;
            if (!p.stdin.write(d)) await new Promise<void>((r) => p.stdin.once('drain', r));
            ch.resume();
          });
        });
        if (!tty) ch.on('end', () => void writing.then(() => p.stdin.end()));
        ch.on('close', () => void hangUp(p));
        p.stdin.on('error', () => undefined);
        p.stdout.pipe(ch, { end: false });
        p.stderr.pipe(ch.stderr, { end: false });
        const ended = (r: NodeJS.ReadableStream) => new Promise<void>((res) => {
          r.once('end', res);
          r.once('close', res);
        });
        await Promise.all([ended(p.stdout), ended(p.stderr)]);
        const code = await p.exit;
        procs.delete(p);
        ch.exit(code ?? 255);
        ch.end();
      }

      async function rsync(ch: ServerChannel): Promise<void> {
        const c = await running(ch);
        if (!c) return;
        const child = startRsyncDaemon(ctx.instanceId, c.pid, ctx.rsyncPath);
        const handle = { destroy: () => child.kill('SIGTERM') };
        procs.add(handle);
        child.stdin!.on('error', () => undefined);
        ch.pipe(child.stdin!);
        child.stdout!.pipe(ch, { end: false });
        child.stderr!.pipe(ch.stderr, { end: false });
        child.once('error', (err) => {
          ch.stderr.write(`rsync: ${err.message}\n`);
        });
        child.once('close', (code) => {
          procs.delete(handle);
          ch.exit(code ?? 255);
          ch.end();
        });
      }
    }

    // Over as soon as both sides are done, without waiting for the stream's 'close': a tunnel stream closes only after
    // its trailers, which are this promise's value. The peer gone (its end) ends ours; ssh2 ends ours when it
    // disconnects.
    stream.on('error', () => undefined);
    stream.once('end', () => setImmediate(() => stream.end()));
    stream.once('finish', () => setImmediate(finish));
    stream.once('close', () => setImmediate(finish));
    const s = stream as Duplex & { remoteAddress?: string; remotePort?: number; remoteFamily?: string };
    if (s.remoteAddress === undefined) {
      const [addr, port] = splitSource(ctx.source);
      Object.assign(s, { remoteAddress: addr, remotePort: port, remoteFamily: isIP(addr) === 6 ? 'IPv6' : 'IPv4' });
    }
    server.injectSocket(stream as never);
  });
}

/** `203.0.113.7:51234` / `[2001:db8::1]:51234` → address and port (0 when none). */
function splitSource(source: string): [string, number] {
  const m = /^\[?([^\]]*?)\]?:(\d+)$/.exec(source);
  return m ? [m[1], Number(m[2])] : [source, 0];
}
