/**
 * Shared pieces of the SSH gateway's tests (not a test file itself): a free block of ports for the gateway, a real
 * OpenSSH server started by the test (`sshd -D`, a temp host key and authorized_keys), a client key pair, the real
 * `ssh` client, and a fake TunnelsApi whose streams are TCP connections to that sshd, standing in for a host's tunnel
 * (the tunnel itself is tested in test/tunnel-*.test.ts). OpenSSH missing fails the test, never skips it.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TunnelError, type TunnelsApi, type TunnelStream, type TunnelStreamEnd, type TunnelStreamInfo, type TunnelTarget } from '../src/tunnels/tunnels-contract.js';

const SSHD = '/usr/sbin/sshd';

/** Whether `port` can be listened on at 127.0.0.1 now. */
function free(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen({ port, host: '127.0.0.1', exclusive: true }, () => s.close(() => resolve(true)));
  });
}

/** A range of `count` ports, all free now, outside the ephemeral range (32768-60999), as GPUPLANE_GATEWAY_PORTS. */
export async function freePortRange(count: number): Promise<{ first: number; last: number; env: string }> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const first = 12_000 + Math.floor(Math.random() * 18_000);
    const ports = Array.from({ length: count }, (_, i) => first + i);
    if ((await Promise.all(ports.map(free))).every(Boolean)) return { first, last: first + count - 1, env: `${first}-${first + count - 1}` };
  }
  throw new Error(`no ${count} free ports in a row found for the gateway`);
}

/** A free port for something else (the test's sshd). */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen({ port: 0, host: '127.0.0.1' }, () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

export interface Sshd {
  port: number;
  dir: string;
  /** A key authorized to log in, and one that is not. */
  key: string;
  strangerKey: string;
  stop(): Promise<void>;
}

function keygen(path: string): void {
  const r = spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'gateway-test', '-f', path], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ssh-keygen failed (OpenSSH's client tools are needed): ${r.error?.message ?? r.stderr}`);
}

/** A real sshd on 127.0.0.1, in the foreground (`-D`), accepting `key` for the current user. */
export async function startSshd(): Promise<Sshd> {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-sshd-'));
  keygen(join(dir, 'host_key'));
  keygen(join(dir, 'client_key'));
  keygen(join(dir, 'stranger_key'));
  writeFileSync(join(dir, 'authorized_keys'), readFileSync(join(dir, 'client_key.pub')), { mode: 0o600 });
  const port = await freePort();
  writeFileSync(join(dir, 'sshd_config'), [
    `Port ${port}`, 'ListenAddress 127.0.0.1', `HostKey ${join(dir, 'host_key')}`, `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
    'PidFile none', 'StrictModes no', 'UsePAM no', 'PasswordAuthentication no', 'KbdInteractiveAuthentication no',
    'PermitRootLogin prohibit-password', 'LogLevel ERROR', 'AcceptEnv none', '',
  ].join('\n'));
  mkdirSync('/run/sshd', { recursive: true }); // sshd's privilege separation directory
  const child: ChildProcess = spawn(SSHD, ['-D', '-e', '-f', join(dir, 'sshd_config')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const exited = once(child, 'exit');
  // Never left behind, even when the test file is cut short (its own time limit).
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  // Ready once it accepts a connection and says its version.
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`sshd exited (${child.exitCode}): ${err}`);
    const hello = await new Promise<string>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.once('data', (d) => {
        s.destroy();
        resolve(d.toString());
      });
      s.once('error', () => resolve(''));
    });
    if (hello.startsWith('SSH-2.0-')) break;
    if (i > 200) throw new Error(`sshd did not start on port ${port}: ${err}`);
    await new Promise((r) => setTimeout(r, 25));
  }
  return {
    port, dir, key: join(dir, 'client_key'), strangerKey: join(dir, 'stranger_key'),
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
      process.off('exit', killOnExit);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** OpenSSH client options of every test: no known_hosts, no prompts, no agent. */
export function sshArgs(key: string, port: number): string[] {
  return [
    '-F', '/dev/null', '-i', key, '-p', String(port), '-o', 'BatchMode=yes', '-o', 'IdentitiesOnly=yes', '-o', 'StrictHostKeyChecking=no',
    '-o', 'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=INFO', '-o', 'ConnectTimeout=20',
  ];
}

export interface SshResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the real `ssh` to the gateway at 127.0.0.1:`port` as root, running `command`. */
export async function ssh(key: string, port: number, command: string): Promise<SshResult> {
  const child = spawn('ssh', [...sshArgs(key, port), 'root@127.0.0.1', command], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { status: code, stdout, stderr };
}

/** A session left open: `ssh … 'echo ready; sleep 600'`, resolved once it printed `ready`. */
export async function openSession(key: string, port: number): Promise<{ child: ChildProcess; exit: Promise<number | null>; stderr(): string }> {
  const child = spawn('ssh', [...sshArgs(key, port), 'root@127.0.0.1', 'echo ready; sleep 600'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const exit = once(child, 'exit').then(([code]) => code as number | null);
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('ready')) resolve();
    });
    void exit.then((code) => reject(new Error(`the session ended (${code}) before it was ready: ${stderr}`)));
  });
  return { child, exit, stderr: () => stderr };
}

/**
 * A TunnelsApi standing in for the hosts' tunnels: a machine in `connected` gets streams that are TCP connections to
 * the test's sshd; its `end` settles, once the stream closes, with `trailers` (what an agent's own SSH server would
 * say). Every open is remembered.
 */
export class FakeTunnels implements TunnelsApi {
  readonly connectedMachines = new Set<number>();
  readonly opened: { machineId: number; target: TunnelTarget; info: TunnelStreamInfo }[] = [];
  readonly streams = new Set<Socket>();
  trailers: TunnelStreamEnd = { auth: 'ok', user: 'root' };

  constructor(private readonly sshdPort: number) {}

  async open(machineId: number, target: TunnelTarget, info: TunnelStreamInfo): Promise<TunnelStream> {
    this.opened.push({ machineId, target, info });
    if (!this.connectedMachines.has(machineId)) throw new TunnelError('not_connected', `machine ${machineId} has no tunnel`);
    const stream = connect(this.sshdPort, '127.0.0.1');
    await once(stream, 'connect');
    this.streams.add(stream);
    const trailers = this.trailers;
    const end = new Promise<TunnelStreamEnd>((resolve) => stream.once('close', () => {
      this.streams.delete(stream);
      resolve(trailers);
    }));
    return { stream, end };
  }

  async connected(machineId: number): Promise<boolean> {
    return this.connectedMachines.has(machineId);
  }
}

/** Waits (polling, a few ms apart) until `check` is true; the test's own time limit bounds it. */
export async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((r) => setTimeout(r, 20));
}
