/**
 * The rsync daemon of `vastai copy` (docs/spec/client-compat-connect.md, "copy"): the client runs
 * `rsync ... vastai_kaalia@ADDR::<instance id>/<path>` over SSH, which asks the server side for
 * `rsync --server --daemon .`, and expects one module named after the instance: its container's file system.
 *
 * It is the HOST's rsync, so it works in an image without rsync, run as a single-use daemon on the SSH channel (or
 * straight on a tunnel stream, target `rsync`) with a configuration of our own: the module's path is
 * `/proc/<container pid>/root` (the container's root, seen through its main process) and `use chroot = yes`, so
 * rsync chroots there before touching any file: every path, and every symlink a renter made (`/data -> /etc`),
 * resolves inside the container's root, never on the host. `uid`/`gid` 0 keep the renter's ownerships (as root in
 * the container may), `numeric ids` since the host's user names mean nothing there. Device files are refused (`-a`
 * still works: rsync drops the `-D` it implies), as are `--copy-devices`/`--write-devices`: a host process must not
 * read or write the container's device nodes. The client's own command line is not used beyond recognising it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** What the client asks to run: `rsync --server --daemon .`, perhaps with options between. */
export function isRsyncDaemonCommand(command: string): boolean {
  return /^rsync\s+--server\s+--daemon(\s+\S+)*\s+\.\s*$/.test(command.trim());
}

/**
 * The daemon's configuration: the instance, rooted at the container's root, under the two names a renter types it by:
 * its id (`7`) and the client's instance form (`C.7`): vast.py passes the id as typed as the module name
 * (`vastai copy up C.7:/x`, the README's form, asks for module `C.7`). The kernel's file systems are left out, so a
 * copy of `/` does not walk the container's /proc, /sys and /dev.
 */
export function rsyncdConfig(instanceId: number, containerPid: number): string {
  if (!Number.isSafeInteger(containerPid) || containerPid <= 0) throw new Error('the container has no process');
  const module = (name: string) => [
    `[${name}]`,
    `path = /proc/${containerPid}/root`,
    `comment = instance ${instanceId}`,
    'read only = false',
    'uid = 0',
    'gid = 0',
    'munge symlinks = no',
    'refuse options = devices copy-devices write-devices',
    'exclude = /proc/ /sys/ /dev/',
  ];
  return ['use chroot = yes', 'numeric ids = yes', 'max verbosity = 2', ...module(String(instanceId)), ...module(`C.${instanceId}`), ''].join('\n');
}

/**
 * Starts the host's rsync as a daemon for the instance; its stdin/stdout are the conversation. The configuration's
 * file is removed when the process exits.
 */
export function startRsyncDaemon(instanceId: number, containerPid: number, rsyncPath = 'rsync'): ChildProcess {
  const dir = mkdtempSync(join(tmpdir(), 'gpuplane-rsyncd-'));
  const conf = join(dir, 'rsyncd.conf');
  writeFileSync(conf, rsyncdConfig(instanceId, containerPid), { mode: 0o600 });
  const child = spawn(rsyncPath, ['--server', '--daemon', `--config=${conf}`, '.'], {
    stdio: ['pipe', 'pipe', 'pipe'],
    cwd: dir,
    env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin' },
  });
  const clean = () => rmSync(dir, { recursive: true, force: true });
  child.once('exit', clean);
  child.once('error', clean);
  return child;
}
