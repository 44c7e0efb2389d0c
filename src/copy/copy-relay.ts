/**
 * copy_direct's transfer: the server's own `rsync` moves a directory from one instance to another, each reached as
 * an rsync daemon (one module named after the instance, the container's file system) on a stream through its host's
 * agent tunnel (`rsync` tunnel target, tunnels-contract.ts). Both hosts may be anywhere, behind NAT, and neither
 * image needs rsync: the daemons are the hosts' (docs/AGENT-PROTOCOL.md, "The tunnel").
 *
 * How rsync gets a tunnel stream: `RSYNC_CONNECT_PROG`. For an `rsync://HOST/…` URL rsync runs that command instead of
 * opening a TCP connection, and speaks the daemon protocol over its stdin/stdout, exactly what the `rsync` target is.
 * The command here is Node itself (always present where the server runs; no socat or nc needed) with a two-line
 * script that joins its stdio to a Unix socket `<job dir>/<HOST>.sock`, which this module serves: each connection
 * there is spliced to a fresh tunnel stream to that side's instance. The job dir is made by mkdtemp (mode 0700), so
 * only the server's own user can reach those sockets.
 *
 * Why through a staging directory (pull everything, then push it) rather than one rsync between the two: rsync has
 * no remote-to-remote mode (one end of every transfer is local), and joining two daemons' protocol streams would mean
 * speaking rsync's handshake (versions, checksum seeds, compat flags) ourselves. Two plain rsync runs use the real
 * tool end to end, keep its semantics (a trailing `/` on the source means "its contents", as in the client's own
 * commands), and a failure says which side failed. The cost is the server's disk for the copy's size and a second
 * pass; the staging disk is watched (STAGING_FREE_MIN_*) and the copy fails rather than filling it.
 *
 * Files keep their permissions, times, owners (numeric, when the server runs as root) and symbolic links as links;
 * device and special files are not copied (`-rlptgo`, not `-a`): a renter's container must not make the server create
 * device nodes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, statfs } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';

/** The staging disk must keep at least this much free while a copy fills it… */
export const STAGING_FREE_MIN_BYTES = 1024 ** 3;
/** …and this share of its size. */
export const STAGING_FREE_MIN_SHARE = 0.05;
/** A stopped copy's rsync processes still there this long after SIGTERM are killed. */
const KILL_AFTER_MS = 5000;
/** How often the staging disk's free space is looked at while a copy pulls. */
const STAGING_CHECK_MS = 2000;
/**
 * rsync's options for both legs (see the header: no devices or special files). The whole file list first
 * (`--no-inc-recursive`), so the progress's percentage is of the whole copy.
 */
const RSYNC_OPTS = ['-rlptgo', '--numeric-ids', '--protect-args', '--info=progress2', '--no-inc-recursive', '--no-motd'];

/**
 * What rsync's exit codes mean, for those it gives without a line saying more: a daemon's own complaint (a missing
 * path) is written to the daemon's stderr on its host, not sent to us.
 */
const EXIT_MEANS: Record<number, string> = {
  11: 'a file or directory could not be made (rsync code 11): no permission there, or the disk is full',
  23: 'some files or directories could not be copied (rsync code 23): a path that does not exist, or one without permission to read or write it',
  24: 'some files vanished while they were copied (rsync code 24)',
};

/** rsync's exit code for a usage error: what a receiver older than 3.2.3 answers to `--mkpath`. */
const MKPATH_UNKNOWN = 1;

/** The Node script RSYNC_CONNECT_PROG runs: stdio ↔ the Unix socket named by its one argument (no `'` or `%` in it). */
const CONNECT_SCRIPT =
  'const s=require("net").connect(process.argv[1]);process.stdin.pipe(s);s.pipe(process.stdout);' +
  's.on("error",()=>process.exit(1));s.on("close",()=>process.exit(0))';

export type RelaySide = 'src' | 'dst';

export interface RelayPlan {
  srcId: number;
  /** Below the source module (copy-locations.ts `modulePath`): `workspace/` copies its contents. */
  srcPath: string;
  dstId: number;
  dstPath: string;
}

export interface RelayDeps {
  /** A byte stream to the side's rsync daemon (a tunnel stream); rejects with a sentence for the renter. */
  open(side: RelaySide): Promise<Duplex>;
  /** The rsync to run. @default 'rsync' */
  rsync?: string;
  /** Where job directories are made. @default os.tmpdir() */
  tmpRoot?: string;
  /** Progress of the running leg: `pull` (source → server), then `push` (server → destination). */
  onProgress?(leg: 'pull' | 'push', percent: number, bytes: number): void;
  signal: AbortSignal;
}

/** Why a copy failed, in a sentence for the renter's status bar. */
export class RelayError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RelayError';
  }
}

/** Single-quotes a word for `sh -c` (RSYNC_CONNECT_PROG runs through the shell). */
const shq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** Runs the copy to the end; rejects with RelayError (or an AbortError once `signal` fires). */
export async function relayCopy(plan: RelayPlan, deps: RelayDeps): Promise<void> {
  const dir = await mkdtemp(join(deps.tmpRoot ?? tmpdir(), 'gpuplane-copy-'));
  if (dir.includes('%')) throw new RelayError('the server cannot stage a copy: its temporary directory name holds a %');
  const stage = join(dir, 'stage');
  // Why a side's stream could not be opened (the agent's or the tunnel's sentence): says more than rsync can.
  const refusals: Partial<Record<RelaySide, string>> = {};
  // A side's stream that broke after it opened: said when rsync says nothing better.
  const breaks: Partial<Record<RelaySide, string>> = {};
  const sockets = new Set<Socket>();
  const streams = new Set<Duplex>();
  const servers: Server[] = [];
  try {
    await mkdir(stage, { mode: 0o700 });
    for (const side of ['src', 'dst'] as const) servers.push(await serveSide(join(dir, `${side}.sock`), side));
    // Its stderr is not rsync's (ours): a helper outliving a killed rsync must not hold our pipe open.
    const env = { ...process.env, RSYNC_CONNECT_PROG: `exec ${shq(process.execPath)} -e ${shq(CONNECT_SCRIPT)} ${shq(join(dir, '%H.sock'))} 2>/dev/null` };
    const remote = (side: RelaySide, id: number, path: string) => `rsync://${side}/${id}/${path}`;
    await runRsync('pull', [...RSYNC_OPTS, remote('src', plan.srcId, plan.srcPath), `${stage}/`], env, 'src', true);
    // The destination's missing parent directories are made (`--mkpath`, rsync 3.2.3+), as `vastai copy` renters
    // expect of a path like /workspace/new/dir/ in a fresh container. A host whose rsync predates it refuses the option
    // (exit code 1): the push is made again without it.
    const push = [await pushSource(stage, plan.srcPath), remote('dst', plan.dstId, plan.dstPath)];
    const pushed = await runRsync('push', [...RSYNC_OPTS, '--mkpath', ...push], env, 'dst', false, [MKPATH_UNKNOWN]);
    if (pushed === MKPATH_UNKNOWN) await runRsync('push', [...RSYNC_OPTS, ...push], env, 'dst', false);
  } finally {
    for (const s of sockets) s.destroy();
    for (const s of streams) s.destroy();
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    await rm(dir, { recursive: true, force: true });
  }

  /** The side's socket: each connection rsync makes is joined to a new stream to that side's daemon. */
  function serveSide(path: string, side: RelaySide): Promise<Server> {
    const server = createServer((conn) => {
      sockets.add(conn);
      conn.on('error', () => conn.destroy());
      conn.on('close', () => sockets.delete(conn));
      deps.open(side).then(
        (stream) => {
          streams.add(stream);
          stream.on('close', () => streams.delete(stream));
          // Listened to before anything can destroy it: a stream destroyed unfinished reports an error.
          stream.on('error', (err: NodeJS.ErrnoException) => {
            // A stream whose far end closed first (the daemon done, or gone), or that we dropped, is not news: rsync
            // says how it ended.
            if (err.code !== 'ERR_STREAM_PREMATURE_CLOSE' && err.name !== 'AbortError' && !deps.signal.aborted) {
              breaks[side] ??= `the stream to the ${side === 'src' ? 'source' : 'destination'} broke: ${err.message}`;
            }
            conn.destroy();
          });
          if (deps.signal.aborted || conn.destroyed) return stream.destroy();
          conn.on('close', () => stream.destroy());
          stream.on('close', () => conn.end());
          conn.pipe(stream);
          stream.pipe(conn);
        },
        (err: unknown) => {
          refusals[side] ??= err instanceof Error ? err.message : String(err);
          conn.destroy();
        },
      );
    });
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(path, () => resolve(server));
    });
  }

  /** Runs one leg to its end; resolves with its exit code when that is 0 or one of `allowed`, else rejects. */
  async function runRsync(leg: 'pull' | 'push', args: string[], env: NodeJS.ProcessEnv, side: RelaySide, watchDisk: boolean, allowed: number[] = []): Promise<number> {
    deps.signal.throwIfAborted();
    // A process group of its own: rsync forks (its connection helper, its receiver), and a stop must reach them all.
    // A forked rsync waiting on a helper whose socket we hold open would otherwise keep the leg from ever ending.
    const child = spawn(deps.rsync ?? 'rsync', args, { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stderr = '';
    let diskFull: string | undefined;
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-4000)));
    let partial = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      const chunks = (partial + d).split(/[\r\n]/);
      partial = chunks.pop() ?? '';
      for (const c of chunks) {
        const m = /^\s*([0-9][0-9,]*)\s+([0-9]{1,3})%/.exec(c);
        if (m) deps.onProgress?.(leg, Number(m[2]), Number(m[1].replace(/,/g, '')));
      }
    });
    const group = (signal: NodeJS.Signals) => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, signal);
      } catch {
        /* the group is gone already */
      }
    };
    // Once rsync is gone, so are its connections and whatever it forked (helpers end with their sockets, and rsync's
    // pipes close).
    child.once('exit', () => {
      for (const s of sockets) s.destroy();
      group('SIGKILL');
    });
    const kill = () => {
      for (const s of sockets) s.destroy();
      group('SIGTERM');
      // rsync ends at SIGTERM; should a process of it not, it is not left behind.
      setTimeout(() => group('SIGKILL'), KILL_AFTER_MS).unref();
    };
    deps.signal.addEventListener('abort', kill, { once: true });
    const disk = watchDisk
      ? setInterval(() => {
          void stagingLow(dir).then((low) => {
            if (low && !diskFull) {
              diskFull = low;
              kill();
            }
          });
        }, STAGING_CHECK_MS)
      : undefined;
    try {
      const code = await exited(child);
      deps.signal.throwIfAborted();
      if (diskFull) throw new RelayError(diskFull);
      if (code !== 0 && allowed.includes(code) && !refusals[side] && !breaks[side]) return code;
      if (code !== 0) {
        const why = refusals[side] ?? lastLine(stderr) ?? breaks[side] ?? EXIT_MEANS[code] ?? lastLine(stderr, true) ?? `rsync exited with code ${code}`;
        throw new RelayError(`${leg === 'pull' ? 'reading the source' : 'writing the destination'} failed: ${why}`);
      }
      return code;
    } finally {
      if (disk) clearInterval(disk);
      deps.signal.removeEventListener('abort', kill);
    }
  }
}

/**
 * What the push sends so that the destination ends as one rsync from the source would leave it: the staged contents
 * (`stage/`) for a source ending in `/` (its contents) or the root; else the one thing the source named, by its own
 * name (`stage/<name>`), so a file copied to `/x/new.txt` becomes that file, as rsync makes it, not a directory.
 */
async function pushSource(stage: string, srcPath: string): Promise<string> {
  if (srcPath === '' || srcPath.endsWith('/')) return `${stage}/`;
  const entries = await readdir(stage);
  return entries.length === 1 ? join(stage, entries[0]) : `${stage}/`;
}

function exited(child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    child.once('error', (err) => reject(new RelayError(`the server could not run rsync: ${err.message}`)));
    child.once('close', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}

/**
 * rsync's most telling line (its first `rsync: …`, `rsync error: …` or `@ERROR` line that is not only "the connection
 * closed"), or with `any`, its last line.
 */
function lastLine(stderr: string, any = false): string | undefined {
  const lines = stderr.split('\n').map((l) => l.trim()).filter(Boolean);
  const told = lines.filter((l) => /^(@ERROR|rsync:|rsync error:)/.test(l) && !/connection unexpectedly closed|error in rsync protocol data stream|error in socket IO|some files\/attrs were not transferred|some files vanished/.test(l));
  return (any ? lines.at(-1) : told.at(0))?.slice(0, 300);
}

/** A sentence when the staging disk is too full to go on, else undefined. */
async function stagingLow(dir: string): Promise<string | undefined> {
  try {
    const s = await statfs(dir);
    const free = s.bavail * s.bsize;
    const total = s.blocks * s.bsize;
    if (free < STAGING_FREE_MIN_BYTES || free < total * STAGING_FREE_MIN_SHARE) {
      return 'the server ran short of disk to stage the copy (it passes through the server); copy less at a time, or over SSH';
    }
  } catch {
    /* the directory went (the copy ended): nothing to say */
  }
  return undefined;
}
