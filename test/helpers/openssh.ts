/**
 * The real OpenSSH client (`ssh`, `scp`, `sftp`) and `rsync` for the end-to-end tests (issue 31), run as a renter
 * runs them: a key made with `ssh-keygen`, no user config (`-F /dev/null`), batch mode (never a prompt), and a
 * known_hosts file of the test's own, so a test can see the host key it was shown. A missing client makes the call
 * reject (ENOENT): the test fails, it never skips.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `cmd args`, with `input` on stdin, killed after `timeoutMs` (a hung client fails the step, it never hangs the test). */
export function run(cmd: string, args: string[], opts: { input?: string | Buffer; timeoutMs?: number; cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], cwd: opts.cwd, env: opts.env ?? process.env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += String(d)));
    child.stderr.on('data', (d) => (stderr += String(d)));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(opts.input ?? '');
  });
}

/** Throws with the command's output unless it exited 0; returns its stdout. */
export async function ok(p: Promise<Ran>, what: string): Promise<string> {
  const r = await p;
  if (r.code !== 0) throw new Error(`${what}: exit ${r.code}\n--- stdout\n${r.stdout.slice(-2000)}\n--- stderr\n${r.stderr.slice(-2000)}`);
  return r.stdout;
}

export interface KeyPair {
  /** The private key's file (mode 600). */
  file: string;
  /** The public key's line (`ssh-ed25519 AAAA… comment`). */
  publicKey: string;
}

/** A new ed25519 key pair in `dir/name`, made by `ssh-keygen`. */
export async function makeKeyPair(dir: string, name: string): Promise<KeyPair> {
  const file = join(dir, name);
  await ok(run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', `${name}@gpuplane-test`, '-f', file]), 'ssh-keygen');
  return { file, publicKey: readFileSync(`${file}.pub`, 'utf8').trim() };
}

/** Where to connect, with what key; `knownHosts` is the test's file (host keys accepted on first sight, then held to). */
export interface SshTarget {
  host: string;
  port: number;
  key: KeyPair;
  knownHosts: string;
  user?: string;
  /** ssh's LogLevel: ERROR by default (no "Permanently added" notes); INFO shows a server's banner and disconnect reason. */
  logLevel?: 'ERROR' | 'INFO';
}

/** The options every client gets: no user config, this key only, no prompts, a bounded connect. */
export function sshOptions(t: SshTarget): string[] {
  return [
    '-F', '/dev/null', '-i', t.key.file, '-o', 'IdentitiesOnly=yes', '-o', 'BatchMode=yes', '-o', 'PasswordAuthentication=no',
    '-o', 'StrictHostKeyChecking=accept-new', '-o', `UserKnownHostsFile=${t.knownHosts}`, '-o', 'ConnectTimeout=15',
    '-o', `LogLevel=${t.logLevel ?? 'ERROR'}`,
  ];
}

/** The `-e` of rsync: ssh with the same options, on the target's port. */
export function rsyncShell(t: SshTarget): string {
  return ['ssh', '-p', String(t.port), ...sshOptions(t)].map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}

const userHost = (t: SshTarget) => `${t.user ?? 'root'}@${t.host}`;

/** `ssh -p PORT root@HOST -- command` (a remote command, no PTY). */
export function ssh(t: SshTarget, command: string, opts: { input?: string | Buffer; extra?: string[]; timeoutMs?: number } = {}): Promise<Ran> {
  return run('ssh', ['-p', String(t.port), ...sshOptions(t), ...(opts.extra ?? []), userHost(t), '--', command], opts);
}

/** `scp -P PORT` from `from` to `to`; a remote side is written `:path` and becomes `root@HOST:path`. */
export function scp(t: SshTarget, from: string, to: string, extra: string[] = []): Promise<Ran> {
  const side = (p: string) => (p.startsWith(':') ? `${userHost(t)}${p}` : p);
  return run('scp', ['-P', String(t.port), ...sshOptions(t), ...extra, side(from), side(to)], { timeoutMs: 120_000 });
}

/** `sftp -b -` with `batch` (one command a line) on stdin. */
export function sftp(t: SshTarget, batch: string): Promise<Ran> {
  return run('sftp', ['-P', String(t.port), ...sshOptions(t), '-b', '-', userHost(t)], { input: batch });
}

/** `rsync -a -e 'ssh …'` from `from` to `to`; a remote side is written `:path` and becomes `root@HOST:path`. */
export function rsync(t: SshTarget, from: string, to: string, extra: string[] = []): Promise<Ran> {
  const side = (p: string) => (p.startsWith(':') ? `${userHost(t)}${p}` : p);
  return run('rsync', ['-a', '-e', rsyncShell(t), ...extra, side(from), side(to)], { timeoutMs: 120_000 });
}

/**
 * Resolves once `ssh … command` exits 0 at `t` (an endpoint that comes up, a key that starts to work), tried again
 * every 300 ms; after `ms`, fails with the client's last words and `context()`. A wait, not a timed assertion.
 */
export async function untilSshWorks(t: SshTarget, command: string, ms: number, context: () => string = () => ''): Promise<Ran> {
  const until = Date.now() + ms;
  for (;;) {
    const r = await ssh(t, command, { timeoutMs: 20_000 });
    if (r.code === 0) return r;
    if (Date.now() > until) throw new Error(`ssh ${t.user ?? 'root'}@${t.host}:${t.port} ${JSON.stringify(command)} never worked: exit ${r.code}: ${r.stderr}\n${context()}`);
    await new Promise((res) => setTimeout(res, 300));
  }
}

/** Resolves once `ssh … true` at `t` is refused (exit 255); after `ms`, fails. */
export async function untilSshRefused(t: SshTarget, ms: number, context: () => string = () => ''): Promise<Ran> {
  const until = Date.now() + ms;
  for (;;) {
    const r = await ssh(t, 'true', { timeoutMs: 20_000 });
    if (r.code === 255) return r;
    if (Date.now() > until) throw new Error(`ssh ${t.host}:${t.port} still lets the key in (exit ${r.code})\n${context()}`);
    await new Promise((res) => setTimeout(res, 300));
  }
}

/** A free port on 127.0.0.1 (the kernel's choice, released for a client such as ssh -L to take). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/**
 * `ssh -N -L 127.0.0.1:local:toHost:toPort` until the returned function stops it; resolves once ssh says the
 * forwarding is up (its LocalCommand runs after the forwardings are set up).
 */
export async function forward(t: SshTarget, local: number, toHost: string, toPort: number): Promise<() => Promise<void>> {
  const child = spawn('ssh', [
    '-p', String(t.port), ...sshOptions(t), '-N', '-o', 'ExitOnForwardFailure=yes', '-o', 'PermitLocalCommand=yes', '-o', 'LocalCommand=echo forwarding-up',
    '-L', `127.0.0.1:${local}:${toHost}:${toPort}`, userHost(t),
  ], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += String(d);
      if (out.includes('forwarding-up')) resolve();
    });
    child.stderr.on('data', (d) => (out += String(d)));
    child.once('error', reject);
    child.once('close', (code) => reject(new Error(`ssh -L exited ${code}: ${out}`)));
  });
  return async () => {
    child.kill('SIGTERM');
    await closed;
  };
}

/**
 * A long `ssh … command` left running: `started` resolves once the command has written to stdout (the session is
 * up), `exited` with ssh's exit code (a session the server ends).
 */
export function holdSession(t: SshTarget, command: string): { started: Promise<void>; exited: Promise<number | null>; stop(): void } {
  const child = spawn('ssh', ['-p', String(t.port), ...sshOptions(t), userHost(t), '--', command], { stdio: ['pipe', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => (err += String(d)));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  const started = new Promise<void>((resolve, reject) => {
    child.stdout.once('data', () => resolve());
    void exited.then((code) => reject(new Error(`ssh exited ${code} before the session was up: ${err}`)));
  });
  started.catch(() => undefined);
  return { started, exited, stop: () => void child.kill('SIGKILL') };
}
