/**
 * The real OpenSSH client (`ssh`, `scp`, `sftp`) and `rsync` for the end-to-end tests (issue 31), run as a renter
 * runs them: a key made with `ssh-keygen`, no user config (`-F /dev/null`), batch mode (never a prompt), and a
 * known_hosts file of the test's own, so a test can see the host key it was shown. A missing client makes the call
 * reject (ENOENT): the test fails, it never skips.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `cmd args`, with `input` on stdin, killed after `timeoutMs` (a hung client fails the step, it never hangs the test). */
export function run(cmd: string, args: string[], opts: { input?: string | Buffer; timeoutMs?: number; cwd?: string } = {}): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], cwd: opts.cwd });
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
}

/** The options every client gets: no user config, this key only, no prompts, a bounded connect. */
export function sshOptions(t: SshTarget): string[] {
  return [
    '-F', '/dev/null', '-i', t.key.file, '-o', 'IdentitiesOnly=yes', '-o', 'BatchMode=yes', '-o', 'PasswordAuthentication=no',
    '-o', 'StrictHostKeyChecking=accept-new', '-o', `UserKnownHostsFile=${t.knownHosts}`, '-o', 'ConnectTimeout=15',
    '-o', 'LogLevel=ERROR',
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
