/**
 * The Docker runtime: the Engine API through dockerode (no `docker` CLI). Where the daemon is comes from dockerode's
 * own defaults: `DOCKER_HOST` when set, else /var/run/docker.sock.
 */
import { createRequire } from 'node:module';
import type Dockerode from 'dockerode';
import type { DockerLoginT, PortMapT } from '../protocol/agent-protocol-schemas.js';
import {
  LABEL_GENERATION, LABEL_INSTANCE, LABEL_MACHINE, LABEL_OWNER, NameConflictError, PortInUseError, ownedBy, sshHostPortOf,
  type ContainerOwner, type ContainerRuntime, type ContainerSpec, type NetworkSpec, type RuntimeContainer, type RuntimeInfo,
} from './runtime.js';
import { demuxDockerLog } from './docker-log.js';
import { dockerVolumes } from './docker-volumes.js';
import { tarOfFile } from './tar-file.js';
import type { DockerProgressEvent } from '../protocol/pull-progress.js';

/** Wait before watching the daemon's events again after the stream broke. */
const EVENTS_RETRY_MS = 1000;

/**
 * Loaded at run time, not bundled: dockerode pulls in gRPC and optional native modules that the CLI's one-file bundle
 * cannot hold, and only the agent needs it (bin/gpuplane.mjs: the bundle's `require` resolves from node_modules).
 */
function loadDockerode(): typeof Dockerode {
  return createRequire(import.meta.url)('dockerode') as typeof Dockerode;
}

/** `busybox` → `busybox:latest`: the Engine API pulls every tag of a repository named without one. */
export function imageRef(image: string): string {
  if (image.includes('@')) return image;
  return image.lastIndexOf(':') > image.lastIndexOf('/') ? image : `${image}:latest`;
}

/**
 * Whether the storage driver takes a per-container size (`--storage-opt size=`): overlay2 only over xfs (mounted with
 * pquota, which `docker info` does not show: create falls back when the daemon refuses), and the block-based drivers.
 */
export function storageSizeSupported(driver: string, backingFs: string | undefined): boolean {
  if (driver === 'overlay2') return backingFs === 'xfs';
  return ['btrfs', 'zfs', 'devicemapper', 'windowsfilter'].includes(driver);
}

/** Docker's label filter for the owner's objects: both labels, each `key=value` (an exact match of the value). */
export function ownerFilter(o: ContainerOwner): string[] {
  return [`${LABEL_MACHINE}=${o.machineId}`, `${LABEL_OWNER}=${o.owner}`];
}

/**
 * The Engine API's create body for an instance's network: a bridge of its own, so no other renter's container shares
 * a segment with it (Docker's isolation rules drop traffic between two bridges), and inter-container traffic off
 * within it too (only its one container is ever on it). Not `Internal`: a workload needs the internet (pip, model
 * downloads), and an internal network cannot publish ports. The host interface gets our name, so the host firewall
 * rule (host-firewall.ts) can name every instance bridge with one wildcard.
 */
export function dockerNetworkOptions(n: NetworkSpec): Dockerode.NetworkCreateOptions {
  return {
    Name: n.name,
    Driver: 'bridge',
    CheckDuplicate: true,
    Internal: false,
    Labels: n.labels,
    Options: { 'com.docker.network.bridge.name': n.bridge, 'com.docker.network.bridge.enable_icc': 'false' },
  };
}

/** The Engine API's create body for a spec. */
export function dockerCreateOptions(spec: ContainerSpec, storageSizeLimit: boolean): Dockerode.ContainerCreateOptions {
  const exposed: Record<string, object> = {};
  const bindings: Record<string, { HostIp: string; HostPort: string }[]> = {};
  for (const [port, b] of Object.entries(spec.ports)) {
    exposed[port] = {};
    bindings[port] = [{ HostIp: b.hostIp, HostPort: String(b.hostPort) }];
  }
  return {
    name: spec.name,
    Image: spec.image,
    Labels: spec.labels,
    Env: spec.env,
    ...(spec.entrypoint ? { Entrypoint: spec.entrypoint } : {}),
    ...(spec.cmd ? { Cmd: spec.cmd } : {}),
    ...(spec.hostname ? { Hostname: spec.hostname } : {}),
    Tty: false,
    ExposedPorts: exposed,
    HostConfig: {
      PortBindings: bindings,
      NanoCpus: spec.nanoCpus,
      CpuShares: spec.cpuShares,
      Memory: spec.memoryBytes,
      // No swap beyond the memory limit: the renter paid for RAM, not for the host's disk.
      MemorySwap: spec.memoryBytes,
      // The agent alone decides when a container runs (an exited one stays exited until the renter starts it).
      RestartPolicy: { Name: 'no' },
      DeviceRequests: spec.gpuDeviceIds ? [{ Driver: 'nvidia', DeviceIDs: spec.gpuDeviceIds, Capabilities: [['gpu']] }] : [],
      ...(storageSizeLimit ? { StorageOpt: { size: `${Math.ceil(spec.diskGb)}G` } } : {}),
      NetworkMode: spec.network.name,
      // Everything dropped but the few a workload needs (container-spec.ts KEPT_CAPABILITIES says why each), and no
      // way back up through setuid binaries or file capabilities.
      CapDrop: ['ALL'],
      CapAdd: spec.capabilities,
      SecurityOpt: ['no-new-privileges'],
      PidsLimit: spec.pidsLimit,
      // json-file whatever the daemon's default driver: the agent reads logs through the Engine API, and this driver
      // rotates; the daemon's default (json-file too, unless changed) keeps every byte forever.
      LogConfig: { Type: 'json-file', Config: { 'max-size': `${spec.log.maxSizeMb}m`, 'max-file': String(spec.log.maxFiles) } },
      // The agent's volumes (volumes.ts), made before the container: never a host path.
      ...(spec.mounts?.length ? { Mounts: spec.mounts.map((m) => ({ Type: 'volume' as const, Source: m.volume, Target: m.target })) } : {}),
    },
  };
}

interface DockerError {
  statusCode?: number;
  json?: { message?: string } | null;
  reason?: string;
  message?: string;
}

function messageOf(err: unknown): string {
  const e = err as DockerError;
  return e?.json?.message ?? e?.message ?? String(err);
}

const statusOf = (err: unknown) => (err as DockerError)?.statusCode;

/** Docker's "never" for a time: 0001-01-01T00:00:00Z. */
function unixSeconds(iso: string | undefined): number | null {
  if (!iso || iso.startsWith('0001-')) return null;
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? null : ms / 1000;
}

function intLabel(labels: Record<string, string>, key: string): number | null {
  const v = labels[key];
  return v !== undefined && /^\d+$/.test(v) ? Number(v) : null;
}

/** A container as the reconcile sees it, from `GET /containers/{id}/json`. */
export function containerFromInspect(c: Dockerode.ContainerInspectInfo): RuntimeContainer {
  const labels = c.Config?.Labels ?? {};
  const running = c.State?.Running === true;
  const ports: PortMapT = {};
  if (running) {
    for (const [port, list] of Object.entries(c.NetworkSettings?.Ports ?? {})) {
      if (list && list.length > 0) ports[port] = list.map((b) => ({ HostIp: b.HostIp, HostPort: b.HostPort }));
    }
  }
  const bound = Object.values(c.HostConfig?.PortBindings ?? {}).flatMap((list) =>
    ((list ?? []) as { HostPort?: string }[]).map((b) => Number(b.HostPort)).filter((p) => Number.isInteger(p) && p > 0),
  );
  // The SSH port the agent holds itself (direct-ssh.ts): reserved like a binding, and shown as 22/tcp while running.
  const sshHostPort = sshHostPortOf(labels);
  if (sshHostPort) {
    bound.push(sshHostPort.hostPort);
    if (running) ports['22/tcp'] = [{ HostIp: sshHostPort.hostIp, HostPort: String(sshHostPort.hostPort) }];
  }
  const status = c.State?.Status ?? 'dead';
  return {
    id: c.Id,
    name: c.Name.replace(/^\//, ''),
    instanceId: intLabel(labels, LABEL_INSTANCE),
    generation: intLabel(labels, LABEL_GENERATION),
    status,
    exitCode: status === 'exited' || status === 'dead' ? (c.State?.ExitCode ?? null) : null,
    finishedAt: unixSeconds(c.State?.FinishedAt),
    boundHostPorts: bound,
    ports,
    sshHostPort,
  };
}

/** `registry/repo:tag` → its repository and tag (`latest` when it names none). */
export function splitRef(ref: string): { repo: string; tag: string } {
  const at = ref.lastIndexOf(':');
  return at > ref.lastIndexOf('/') ? { repo: ref.slice(0, at), tag: ref.slice(at + 1) } : { repo: ref, tag: 'latest' };
}

/** Collects an exec's multiplexed output (stdout and stderr frames, in order), keeping at most `maxBytes`. */
function collect(stream: NodeJS.ReadableStream, maxBytes: number, timeoutS: number): Promise<{ buf: Buffer; timedOut: boolean }> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    const finish = (timedOut: boolean) => {
      clearTimeout(timer);
      resolve({ buf: Buffer.concat(parts), timedOut });
    };
    const timer = setTimeout(() => {
      (stream as unknown as { destroy?(): void }).destroy?.();
      finish(true);
    }, timeoutS * 1000);
    stream.on('data', (d: Buffer) => {
      // Frame headers count too: the cut is made again on the text.
      if (size < maxBytes + 8) parts.push(d);
      size += d.length;
    });
    stream.once('end', () => finish(false));
    stream.once('close', () => finish(false));
    stream.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

export interface DockerRuntimeOptions {
  /**
   * Create containers without a disk size when the daemon refuses one (overlay2 on xfs without pquota); otherwise
   * such a create fails, saying why (issue 29 item 14). @default false
   */
  allowUnlimitedDisk?: boolean;
}

/** A Docker Engine client (the runtime's and the data plane's, agent-main.ts). */
export function createDockerClient(options: Dockerode.DockerOptions = {}): Dockerode {
  return new (loadDockerode())(options);
}

/** `client`: a Dockerode client to use instead of one made from `options` (tests pass a stand-in). */
export function createDockerRuntime(options: Dockerode.DockerOptions = {}, client?: Dockerode, opts: DockerRuntimeOptions = {}): ContainerRuntime {
  const docker = client ?? new (loadDockerode())(options);
  let storageSizeLimit: boolean | undefined;

  async function info(): Promise<RuntimeInfo> {
    const i = await docker.info();
    const backing = (i.DriverStatus as [string, string][] | undefined)?.find(([k]) => k === 'Backing Filesystem')?.[1];
    storageSizeLimit ??= storageSizeSupported(i.Driver, backing);
    return { dataRoot: i.DockerRootDir, storageSizeLimit, storageDriver: backing ? `${i.Driver} on ${backing}` : i.Driver };
  }

  const authOf = (login: DockerLoginT | null) =>
    login ? { authconfig: { username: login.username, password: login.password, serveraddress: login.server } } : {};

  /**
   * Follows a pull or push to its end; a failure can end the stream normally, with the error as a message. Each
   * message goes to `onProgress` as it comes (a pull's per-layer progress, summed by protocol/pull-progress.ts).
   */
  async function follow(stream: NodeJS.ReadableStream, what: string, onProgress?: (e: DockerProgressEvent) => void): Promise<void> {
    const output = await new Promise<{ error?: string }[]>((resolve, reject) =>
      docker.modem.followProgress(
        stream,
        (err: Error | null, out: { error?: string }[]) => (err ? reject(err) : resolve(out)),
        onProgress ? (e: DockerProgressEvent) => onProgress(e) : undefined,
      ),
    );
    const failed = output.find((o) => typeof o.error === 'string');
    if (failed) throw new Error(`${what} failed: ${failed.error}`);
  }

  async function pull(ref: string, login: DockerLoginT | null, onProgress?: (e: DockerProgressEvent) => void): Promise<void> {
    let stream: NodeJS.ReadableStream;
    try {
      stream = await docker.pull(ref, authOf(login));
    } catch (err) {
      throw new Error(`pull of ${ref} failed: ${messageOf(err)}`);
    }
    await follow(stream, `pull of ${ref}`, onProgress);
  }

  return {
    info,
    volumes: dockerVolumes(docker, { allowUnlimitedDisk: opts.allowUnlimitedDisk }),

    async list(owner) {
      const listed = await docker.listContainers({ all: true, filters: { label: ownerFilter(owner) } });
      const inspected = await Promise.all(
        // Checked again here: only a container whose labels prove it ours is ever acted on.
        listed.filter((c) => ownedBy(c.Labels, owner)).map(async (c) => {
          try {
            return containerFromInspect(await docker.getContainer(c.Id).inspect());
          } catch (err) {
            if (statusOf(err) === 404) return null; // removed since the listing
            throw err;
          }
        }),
      );
      return inspected.filter((c): c is RuntimeContainer => c !== null);
    },

    async unowned(machineId) {
      const listed = await docker.listContainers({ all: true, filters: { label: [`${LABEL_MACHINE}=${machineId}`] } });
      return listed.filter((c) => c.Labels?.[LABEL_OWNER] === undefined).map((c) => (c.Names?.[0] ?? c.Id).replace(/^\//, ''));
    },

    async networks(owner) {
      const listed = await docker.listNetworks({ filters: { label: ownerFilter(owner) } });
      return listed
        .filter((n) => ownedBy(n.Labels, owner))
        .map((n) => ({ id: n.Id, name: n.Name, instanceId: intLabel(n.Labels ?? {}, LABEL_INSTANCE) }));
    },

    async removeNetwork(id) {
      try {
        await docker.getNetwork(id).remove();
      } catch (err) {
        if (statusOf(err) === 404) return;
        throw new Error(`removing network ${id} failed: ${messageOf(err)}`);
      }
    },

    async ensureImage(image, login, opts = {}) {
      const ref = imageRef(image);
      if (!opts.fresh) {
        try {
          await docker.getImage(ref).inspect();
          return;
        } catch (err) {
          if (statusOf(err) !== 404) throw err;
        }
      }
      await pull(ref, login, opts.onProgress);
    },

    async writeFile(id, path, content) {
      try {
        await docker.getContainer(id).putArchive(tarOfFile(path, content, Date.now() / 1000), { path: '/' });
      } catch (err) {
        throw new Error(`writing ${path} into the container failed: ${messageOf(err)}`);
      }
    },

    async exec(id, argv, { maxChars, timeoutS }) {
      let exec: Dockerode.Exec;
      let stream: NodeJS.ReadableStream;
      try {
        exec = await docker.getContainer(id).exec({ Cmd: argv, AttachStdout: true, AttachStderr: true, AttachStdin: false, Tty: false, WorkingDir: '/' });
        stream = (await exec.start({ hijack: true, stdin: false })) as unknown as NodeJS.ReadableStream;
      } catch (err) {
        throw new Error(`exec failed: ${messageOf(err)}`);
      }
      const { buf, timedOut } = await collect(stream, maxChars * 4, timeoutS);
      const output = demuxDockerLog(buf).slice(0, maxChars);
      const exitCode = timedOut ? null : ((await exec.inspect()).ExitCode ?? null);
      return { output, exitCode, timedOut };
    },

    async commit(id, ref, pause) {
      const { repo, tag } = splitRef(ref);
      try {
        await docker.getContainer(id).commit({ repo, tag, pause });
      } catch (err) {
        throw new Error(`commit failed: ${messageOf(err)}`);
      }
    },

    async push(ref, login) {
      const { repo, tag } = splitRef(ref);
      let stream: NodeJS.ReadableStream;
      try {
        stream = await docker.getImage(repo).push({ tag, ...authOf(login) });
      } catch (err) {
        throw new Error(`push of ${ref} failed: ${messageOf(err)}`);
      }
      await follow(stream, `push of ${ref}`);
    },

    async removeImage(ref) {
      try {
        await docker.getImage(ref).remove();
      } catch (err) {
        if (statusOf(err) === 404) return;
        throw new Error(`removing image ${ref} failed: ${messageOf(err)}`);
      }
    },

    async create(spec) {
      if (storageSizeLimit === undefined) await info();
      try {
        await docker.createNetwork(dockerNetworkOptions(spec.network));
      } catch (err) {
        // Made by an earlier attempt (the container's create failed after it): the same network, by its labels' name.
        if (statusOf(err) !== 409) throw new Error(`creating network ${spec.network.name} failed: ${messageOf(err)}`);
      }
      const attempt = (withSize: boolean) => docker.createContainer(dockerCreateOptions({ ...spec, image: imageRef(spec.image) }, withSize));
      try {
        return (await attempt(storageSizeLimit === true)).id;
      } catch (err) {
        if (statusOf(err) === 409) throw new NameConflictError(`a container named ${spec.name} exists`);
        // overlay2 on xfs without pquota: the daemon says so only when asked. From then on the hardware reports no
        // disk limit; the container is made without one only where the operator allowed that.
        if (storageSizeLimit && /storage-opt|storage opt|quota/i.test(messageOf(err))) {
          storageSizeLimit = false;
          if (!opts.allowUnlimitedDisk) {
            throw new Error(`create failed: the storage driver cannot limit the container's disk (${messageOf(err)}); mount Docker's data root on xfs with pquota, or run the agent with --allow-unlimited-disk`);
          }
          return (await attempt(false)).id;
        }
        throw new Error(`create failed: ${messageOf(err)}`);
      }
    },

    async start(id) {
      try {
        await docker.getContainer(id).start();
      } catch (err) {
        if (statusOf(err) === 304) return; // already running
        const msg = messageOf(err);
        if (/port is already allocated|address already in use/i.test(msg)) throw new PortInUseError(`start failed: ${msg}`);
        throw new Error(`start failed: ${msg}`);
      }
    },

    async stop(id, timeoutS) {
      try {
        await docker.getContainer(id).stop({ t: timeoutS });
      } catch (err) {
        if (statusOf(err) === 304 || statusOf(err) === 404) return; // already stopped, or gone
        throw new Error(`stop failed: ${messageOf(err)}`);
      }
    },

    async remove(id) {
      try {
        await docker.getContainer(id).remove({ force: true, v: true });
      } catch (err) {
        // Gone already, or being removed by an earlier call: the outcome is the one wanted.
        if (statusOf(err) === 404 || (statusOf(err) === 409 && /already in progress/i.test(messageOf(err)))) return;
        throw new Error(`remove failed: ${messageOf(err)}`);
      }
    },

    async logs(id, tail) {
      const buf = (await docker.getContainer(id).logs({ stdout: true, stderr: true, follow: false, ...(tail !== null ? { tail } : {}) })) as unknown as Buffer;
      return demuxDockerLog(Buffer.isBuffer(buf) ? buf : Buffer.from(String(buf)));
    },

    watch(owner, onChange) {
      let stopped = false;
      let stream: NodeJS.ReadableStream | undefined;
      let timer: NodeJS.Timeout | undefined;
      const connect = async () => {
        if (stopped) return;
        try {
          const s = await docker.getEvents({ filters: { type: ['container'], label: ownerFilter(owner) } });
          if (stopped) return (s as unknown as { destroy(): void }).destroy();
          stream = s;
          // Events may have been missed while not watching.
          onChange();
          s.on('data', () => onChange());
          s.once('error', retry);
          s.once('end', retry);
        } catch {
          retry();
        }
      };
      const retry = () => {
        if (stopped || timer) return;
        timer = setTimeout(() => {
          timer = undefined;
          void connect();
        }, EVENTS_RETRY_MS);
      };
      void connect();
      return () => {
        stopped = true;
        if (timer) clearTimeout(timer);
        (stream as unknown as { destroy?(): void } | undefined)?.destroy?.();
      };
    },
  };
}
