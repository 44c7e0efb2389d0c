/**
 * What the data plane needs of Docker, beyond the reconcile's runtime (runtime.ts): an instance's container found by
 * its labels (only the agent's own: machine id and owner both match, as everywhere in the agent), its address on the
 * instance's own network and its main process's pid (the rsync daemon's root is `/proc/<pid>/root`), and interactive
 * `docker exec` processes: stdin, stdout and stderr as streams, a TTY that can be resized, the exit status. Kept here,
 * beside its one user, rather than in the reconcile's ContainerRuntime, which has no streams.
 */
import { PassThrough, type Readable, type Writable } from 'node:stream';
import type Dockerode from 'dockerode';
import { LABEL_INSTANCE, ownedBy, type ContainerOwner } from '../runtime.js';
import { ownerFilter } from '../docker-runtime.js';

/** An instance's container as the data plane sees it now. */
export interface InstanceContainer {
  id: string;
  running: boolean;
  /** The main process's pid in the host's pid namespace (0 when not running). */
  pid: number;
  /** Its address on the instance's network (null when not running or on no network). */
  ip: string | null;
}

export interface ExecOptions {
  argv: string[];
  /** `NAME=value` entries. */
  env?: string[];
  tty?: boolean;
  /** @default '/' */
  workingDir?: string;
  /** @default '0' (root, by number: an image without /etc/passwd has no user named root) */
  user?: string;
}

/** A process started by `docker exec`. */
export interface ExecProcess {
  stdin: Writable;
  stdout: Readable;
  /** Empty with a TTY (the TTY merges both into stdout). */
  stderr: Readable;
  /** Resizes the TTY (no-op without one). */
  resize(rows: number, cols: number): Promise<void>;
  /** The exit status once the process is over (null when Docker cannot say). */
  exit: Promise<number | null>;
  /**
   * Drops the connection to the process. Docker keeps the process running (a shell on a TTY waits forever), so a
   * session that ends hangs it up first (`hangup`).
   */
  destroy(): void;
  /** Sends SIGHUP to the process when it still runs, as sshd's closing of a session's TTY or pipes would. */
  hangup(): Promise<void>;
}

export interface ContainerAccess {
  /** The owner's container of the instance, or null when it has none. */
  find(instanceId: number): Promise<InstanceContainer | null>;
  exec(containerId: string, opts: ExecOptions): Promise<ExecProcess>;
}

const HEADER_BYTES = 8;

/**
 * Splits Docker's multiplexed exec stream (8-byte frame headers: stream type, 3 zero bytes, a big-endian length) into
 * stdout and stderr, as it arrives, pausing the source while either output is full.
 */
export function demuxInto(source: Readable, stdout: PassThrough, stderr: PassThrough): void {
  let pending: Buffer = Buffer.alloc(0);
  source.on('data', (chunk: Buffer) => {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    let full = false;
    while (pending.length >= HEADER_BYTES) {
      const size = pending.readUInt32BE(4);
      if (pending.length < HEADER_BYTES + size) break;
      const payload = pending.subarray(HEADER_BYTES, HEADER_BYTES + size);
      const to = pending[0] === 2 ? stderr : stdout;
      if (!to.write(payload)) full = true;
      pending = pending.subarray(HEADER_BYTES + size);
    }
    if (full) {
      source.pause();
      const resume = () => {
        if (stdout.writableNeedDrain || stderr.writableNeedDrain) return;
        source.resume();
      };
      stdout.once('drain', resume);
      stderr.once('drain', resume);
    }
  });
  const end = () => {
    stdout.end();
    stderr.end();
  };
  source.once('end', end);
  source.once('close', end);
  source.once('error', end);
}

/** The Docker implementation, with the agent's dockerode client. */
export function createDockerContainerAccess(docker: Dockerode, owner: ContainerOwner): ContainerAccess {
  return {
    async find(instanceId) {
      const listed = await docker.listContainers({
        all: true,
        filters: { label: [...ownerFilter(owner), `${LABEL_INSTANCE}=${instanceId}`] },
      });
      // Checked again, as the reconcile does: only a container whose labels prove it ours is ever used.
      const mine = listed.filter((c) => ownedBy(c.Labels, owner) && c.Labels?.[LABEL_INSTANCE] === String(instanceId));
      if (mine.length === 0) return null;
      // A recreated instance may briefly have two (the old one being removed): the running one wins.
      const inspected = await Promise.all(mine.map((c) => docker.getContainer(c.Id).inspect().catch(() => null)));
      const live = inspected.filter((c): c is Dockerode.ContainerInspectInfo => c !== null);
      const c = live.find((x) => x.State?.Running) ?? live[0];
      if (!c) return null;
      const running = c.State?.Running === true && !c.State?.Paused && !c.State?.Restarting;
      const nets = Object.values(c.NetworkSettings?.Networks ?? {});
      const ip = nets.map((n) => n.IPAddress).find((a) => !!a) ?? null;
      return { id: c.Id, running, pid: running ? (c.State?.Pid ?? 0) : 0, ip: running ? ip : null };
    },

    async exec(containerId, opts) {
      const tty = opts.tty === true;
      const exec = await docker.getContainer(containerId).exec({
        Cmd: opts.argv,
        Env: opts.env ?? [],
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        Tty: tty,
        WorkingDir: opts.workingDir ?? '/',
        User: opts.user ?? '0',
      });
      const socket = (await exec.start({ hijack: true, stdin: true, Tty: tty })) as unknown as import('node:stream').Duplex;
      // Room for a few of Docker's 64 KiB reads, so a bulk copy is not paused at every chunk.
      const stdout = new PassThrough({ highWaterMark: 1024 * 1024 });
      const stderr = new PassThrough();
      if (tty) {
        socket.pipe(stdout);
        socket.once('close', () => stdout.end());
        stderr.end();
      } else {
        demuxInto(socket, stdout, stderr);
      }
      socket.on('error', () => undefined);
      const exit = new Promise<number | null>((resolve) => {
        let done = false;
        const settle = async () => {
          if (done) return;
          done = true;
          // The stream ends as the process does; Docker may take a moment to record the exit code.
          for (let i = 0; i < 50; i++) {
            const info = await exec.inspect().catch(() => null);
            if (!info) return resolve(null);
            if (!info.Running) return resolve(info.ExitCode ?? null);
            await new Promise((r) => setTimeout(r, 20));
          }
          resolve(null);
        };
        socket.once('end', () => void settle());
        socket.once('close', () => void settle());
      });
      return {
        stdin: socket,
        stdout,
        stderr,
        async resize(rows, cols) {
          if (!tty || rows <= 0 || cols <= 0) return;
          await exec.resize({ h: rows, w: cols }).catch(() => undefined);
        },
        exit,
        destroy: () => socket.destroy(),
        async hangup() {
          // Docker has no verb for signalling an exec; its process is in the host's pid namespace as `Pid`, and the
          // agent runs there. Looked up just before, so the pid is the exec's own while it runs.
          const info = await exec.inspect().catch(() => null);
          if (!info?.Running || !info.Pid || info.Pid <= 1) return;
          try {
            process.kill(info.Pid, 'SIGHUP');
          } catch {
            // gone meanwhile, or not ours to signal
          }
        },
      };
    },
  };
}
