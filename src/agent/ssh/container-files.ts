/**
 * File operations on an instance's container for the SFTP subsystem, each one run INSIDE the container with `docker
 * exec` of the POSIX tools every Linux image has (busybox's or coreutils': sh, stat, ls, cat, tail, dd, mkdir, rm, mv,
 * chmod, chown, touch, ln, readlink).
 *
 * Why inside, and not on the host through `/proc/<pid>/root`: the container's files belong to a renter who is root in
 * it, and a path there may run through symlinks the renter made (`/data -> /etc`), swapped at any moment. Resolved by
 * the host, such a path reaches the host's files; no check made first holds against a swap made after it (Node has
 * no openat2 with RESOLVE_IN_ROOT). A process inside the container resolves every path in the container's own mount
 * namespace and root, with the container's capabilities, user namespace and cgroup: a symlink to /etc names the
 * container's /etc, as it would for the renter's own shell. So no file operation of the SFTP server can touch the host
 * by construction, however the paths are made. The cost is an exec per metadata operation (a few ms) and one per
 * opened file's stream; file contents stream through one long-lived `cat`/`tail`/`dd` per handle, not an exec per
 * block. An image with no shell at all (distroless) has no SFTP: sessions there fail to open files, saying why.
 *
 * Paths are passed as arguments to a fixed script (`sh -c SCRIPT sh PATH...`), never spliced into it.
 */
import type { Readable } from 'node:stream';
import type { ContainerAccess, ExecProcess } from './container-access.js';

/** What a file operation can fail with, as SFTP's status codes name them. */
export type FileErrorCode = 'no_such_file' | 'permission_denied' | 'failure' | 'exists';

export class FileOpError extends Error {
  constructor(readonly code: FileErrorCode, message: string) {
    super(message);
    this.name = 'FileOpError';
  }
}

export interface FileAttrs {
  size: number;
  /** st_mode: the type bits and the permissions. */
  mode: number;
  uid: number;
  gid: number;
  atime: number;
  mtime: number;
}

export interface DirEntry {
  name: string;
  attrs: FileAttrs;
}

/** Exit codes the scripts below use to say why they failed. */
const EXIT_NO_SUCH_FILE = 2;
const EXIT_PERMISSION = 3;
const EXIT_EXISTS = 4;

/** `stat -c` format: size, raw mode (hex), uid, gid, atime, mtime, then the name (last: it may hold spaces). */
const STAT_FORMAT = '%s %f %u %g %X %Y %n';
const STAT_LINE = /^(\d+) ([0-9a-fA-F]+) (\d+) (\d+) (\d+) (\d+) (.*)$/;

/** Parses `stat -c STAT_FORMAT` output; a line that does not start a record continues the previous name (a newline in it). */
export function parseStatLines(text: string): DirEntry[] {
  const out: DirEntry[] = [];
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  for (const line of lines) {
    const m = STAT_LINE.exec(line);
    if (m) {
      out.push({
        name: m[7],
        attrs: { size: Number(m[1]), mode: parseInt(m[2], 16), uid: Number(m[3]), gid: Number(m[4]), atime: Number(m[5]), mtime: Number(m[6]) },
      });
    } else if (out.length > 0) {
      out[out.length - 1].name += `\n${line}`;
    }
  }
  return out;
}

const SCRIPTS = {
  // $1 path, $2 "L" to follow a symlink.
  stat: `[ -e "$1" ] || [ -L "$1" ] || exit ${EXIT_NO_SUCH_FILE}; if [ "$2" = L ]; then exec stat -L -c '${STAT_FORMAT}' -- "$1"; else exec stat -c '${STAT_FORMAT}' -- "$1"; fi`,
  readdir: `[ -e "$1" ] || exit ${EXIT_NO_SUCH_FILE}; [ -d "$1" ] || exit 1; cd -- "$1" || exit ${EXIT_PERMISSION}; stat -c '${STAT_FORMAT}' -- .* * 2>/dev/null; exit 0`,
  // $1 path, $2 flags: r read, c create, t truncate, x exclusive; $3 mode for a new file (octal) or "".
  open: `f=$1
if [ -e "$f" ] || [ -L "$f" ]; then
  case $2 in *x*) exit ${EXIT_EXISTS};; esac
  [ -d "$f" ] && exit 1
  [ -e "$f" ] || exit ${EXIT_NO_SUCH_FILE}
  case $2 in *t*) : > "$f" || exit ${EXIT_PERMISSION};; esac
else
  case $2 in *c*) ;; *) exit ${EXIT_NO_SUCH_FILE};; esac
  [ -d "$(dirname -- "$f")" ] || exit ${EXIT_NO_SUCH_FILE}
  : > "$f" || exit ${EXIT_PERMISSION}
  [ -n "$3" ] && chmod "$3" "$f"
fi
exit 0`,
  // $1 path, $2 offset (bytes).
  read: `[ "$2" -gt 0 ] && exec tail -c +$(($2 + 1)) -- "$1"; exec cat -- "$1"`,
  // $1 path, $2 offset, $3 "a" to append.
  write: `[ "$3" = a ] && exec cat >> "$1"; exec dd of="$1" bs=65536 seek="$2" oflag=seek_bytes conv=notrunc 2>/dev/null`,
  mkdir: `[ -e "$1" ] || [ -L "$1" ] && exit ${EXIT_EXISTS}; [ -d "$(dirname -- "$1")" ] || exit ${EXIT_NO_SUCH_FILE}; mkdir -- "$1" || exit 1; [ -n "$2" ] && chmod "$2" "$1"; exit 0`,
  rmdir: `[ -e "$1" ] || exit ${EXIT_NO_SUCH_FILE}; exec rmdir -- "$1"`,
  remove: `[ -e "$1" ] || [ -L "$1" ] || exit ${EXIT_NO_SUCH_FILE}; [ -d "$1" ] && [ ! -L "$1" ] && exit 1; exec rm -f -- "$1"`,
  // SFTP's rename does not replace an existing target (v3); posix-rename does.
  rename: `[ -e "$1" ] || [ -L "$1" ] || exit ${EXIT_NO_SUCH_FILE}; [ -e "$2" ] || [ -L "$2" ] && exit ${EXIT_EXISTS}; exec mv -- "$1" "$2"`,
  readlink: `[ -L "$1" ] || exit ${EXIT_NO_SUCH_FILE}; exec readlink -- "$1"`,
  symlink: `[ -e "$2" ] || [ -L "$2" ] && exit ${EXIT_EXISTS}; exec ln -s -- "$1" "$2"`,
  // $1 path, then "mode" "uid:gid" "size" "mtime-as-touch-t" (each "" when not set).
  setstat: `f=$1
[ -e "$f" ] || exit ${EXIT_NO_SUCH_FILE}
[ -n "$4" ] && { truncate -s "$4" "$f" 2>/dev/null || { [ "$4" = 0 ] && : > "$f"; } || exit 1; }
[ -n "$3" ] && { chown "$3" "$f" || exit ${EXIT_PERMISSION}; }
[ -n "$2" ] && { chmod "$2" "$f" || exit ${EXIT_PERMISSION}; }
[ -n "$5" ] && { TZ=UTC0 touch -c -t "$5" "$f" || exit 1; }
exit 0`,
  home: 'cd ~ 2>/dev/null && [ "$PWD" != "" ] && echo "$PWD" || echo /',
} as const;

/** `touch -t` wants [[CC]YY]MMDDhhmm[.ss]; the script runs it with TZ=UTC0. */
export function touchTime(unixSeconds: number): string {
  const d = new Date(unixSeconds * 1000);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}${p(d.getUTCHours())}${p(d.getUTCMinutes())}.${p(d.getUTCSeconds())}`;
}

async function readAll(r: Readable, limit = 64 * 1024 * 1024): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of r) {
    size += (chunk as Buffer).length;
    if (size <= limit) parts.push(chunk as Buffer);
  }
  return Buffer.concat(parts);
}

function failure(code: number | null, stderr: string, what: string): FileOpError {
  const detail = stderr.trim().split('\n').pop() ?? '';
  if (code === EXIT_NO_SUCH_FILE || /no such file|nonexistent/i.test(detail)) return new FileOpError('no_such_file', `${what}: no such file`);
  if (code === EXIT_PERMISSION || /permission denied|read-only/i.test(detail)) return new FileOpError('permission_denied', `${what}: permission denied`);
  if (code === EXIT_EXISTS) return new FileOpError('exists', `${what}: already exists`);
  return new FileOpError('failure', detail ? `${what}: ${detail}` : `${what} failed`);
}

/** The files of one container, as one SFTP session sees them. */
export class ContainerFiles {
  /** `containerId`: settles once the container is found (the session is accepted before, as SSH wants). */
  constructor(
    private readonly access: ContainerAccess,
    private readonly containerId: Promise<string>,
  ) {
    containerId.catch(() => undefined);
  }

  private async spawn(script: string, args: string[]): Promise<ExecProcess> {
    return this.access.exec(await this.containerId, { argv: ['/bin/sh', '-c', script, 'sh', ...args], env: ['HOME=/root'] });
  }

  /** Runs a script to its end: its stdout, or a FileOpError from its exit status. */
  private async run(script: string, args: string[], what: string): Promise<Buffer> {
    let p: ExecProcess;
    try {
      p = await this.spawn(script, args);
    } catch (err) {
      throw new FileOpError('failure', `${what}: the container cannot run it (${(err as Error).message})`);
    }
    p.stdin.end();
    const [out, err, code] = await Promise.all([readAll(p.stdout), readAll(p.stderr, 64 * 1024), p.exit]);
    if (code !== 0) throw failure(code, err.toString('utf8'), what);
    return out;
  }

  async home(): Promise<string> {
    const out = (await this.run(SCRIPTS.home, [], 'home')).toString('utf8').trim();
    return out.startsWith('/') ? out : '/';
  }

  async stat(path: string, follow: boolean): Promise<FileAttrs> {
    const [e] = parseStatLines((await this.run(SCRIPTS.stat, [path, follow ? 'L' : ''], path)).toString('utf8'));
    if (!e) throw new FileOpError('failure', `${path}: no attributes`);
    return e.attrs;
  }

  async readdir(path: string): Promise<DirEntry[]> {
    return parseStatLines((await this.run(SCRIPTS.readdir, [path], path)).toString('utf8'));
  }

  /** Checks and prepares a file for a handle: `flags` as SCRIPTS.open reads them. */
  async open(path: string, flags: string, mode: number | null): Promise<void> {
    await this.run(SCRIPTS.open, [path, flags, mode === null ? '' : (mode & 0o7777).toString(8)], path);
  }

  async mkdir(path: string, mode: number | null): Promise<void> {
    await this.run(SCRIPTS.mkdir, [path, mode === null ? '' : (mode & 0o7777).toString(8)], path);
  }

  async rmdir(path: string): Promise<void> {
    await this.run(SCRIPTS.rmdir, [path], path);
  }

  async remove(path: string): Promise<void> {
    await this.run(SCRIPTS.remove, [path], path);
  }

  async rename(from: string, to: string): Promise<void> {
    await this.run(SCRIPTS.rename, [from, to], from);
  }

  async readlink(path: string): Promise<string> {
    return (await this.run(SCRIPTS.readlink, [path], path)).toString('utf8').replace(/\n$/, '');
  }

  async symlink(target: string, linkPath: string): Promise<void> {
    await this.run(SCRIPTS.symlink, [target, linkPath], linkPath);
  }

  async setstat(path: string, a: Partial<FileAttrs>): Promise<void> {
    const owner = a.uid !== undefined && a.gid !== undefined ? `${a.uid}:${a.gid}` : '';
    const args = [
      path,
      a.mode !== undefined ? (a.mode & 0o7777).toString(8) : '',
      owner,
      a.size !== undefined ? String(a.size) : '',
      a.mtime !== undefined ? touchTime(a.mtime) : '',
    ];
    if (args.slice(1).every((x) => x === '')) return;
    await this.run(SCRIPTS.setstat, args, path);
  }

  /** A process printing the file from `offset` on. */
  reader(path: string, offset: number): Promise<ExecProcess> {
    return this.spawn(SCRIPTS.read, [path, String(offset)]);
  }

  /** A process writing its stdin into the file at `offset` (or at its end when `append`), keeping what lies beyond. */
  writer(path: string, offset: number, append: boolean): Promise<ExecProcess> {
    return this.spawn(SCRIPTS.write, [path, String(offset), append ? 'a' : '']);
  }

  /** Turns a finished process's status into a FileOpError when it failed. */
  static async finished(p: ExecProcess, what: string): Promise<void> {
    const [err, code] = await Promise.all([readAll(p.stderr, 64 * 1024), p.exit]);
    if (code !== 0) throw failure(code, err.toString('utf8'), what);
  }
}
