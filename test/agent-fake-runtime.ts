/**
 * An in-memory container runtime for the reconcile tests: it keeps containers as the Docker runtime reports them,
 * records every call, and lets a test make a container exit, fail a pull, or hold a pull until released.
 */
import {
  LABEL_GENERATION, LABEL_INSTANCE, LABEL_MACHINE, LABEL_OWNER, NameConflictError, sshHostPortOf,
  type ContainerOwner, type ContainerRuntime, type ContainerSpec, type NetworkSpec, type RuntimeContainer,
} from '../src/agent/runtime.js';
import type { DockerProgressEvent } from '../src/protocol/pull-progress.js';

/** The owner id the reconcile tests' agent runs as; `addContainer` makes containers of it unless told otherwise. */
export const FAKE_OWNER = 'f00dfeedf00dfeed';

export interface FakeContainer extends RuntimeContainer {
  spec: ContainerSpec;
  machineId: number;
  /** The owner label; null: none (a container made before owner labels). */
  owner: string | null;
  log: string;
}

export interface FakeNetwork extends NetworkSpec {
  id: string;
}

/** `storageSizeLimit`: whether the storage driver limits a container's disk (@default true). */
export function fakeRuntime(opts: { storageSizeLimit?: boolean } = {}) {
  const containers = new Map<string, FakeContainer>();
  const calls: string[] = [];
  const images = new Set<string>(['busybox:latest']);
  const failPull = new Map<string, string>();
  const failPush = new Map<string, string>();
  const heldPulls = new Map<string, Promise<void>>();
  /** Where a pull under way of each image reports its progress (the reconciler's `onProgress`). */
  const progressSinks = new Map<string, (e: DockerProgressEvent) => void>();
  const networks = new Map<string, FakeNetwork>();
  const watchers = new Set<{ owner: ContainerOwner; fn: () => void }>();
  let nextId = 1;
  let clock = 1_800_000_000;

  const notify = (c: { machineId: number; owner: string | null }) => {
    for (const w of watchers) if (w.owner.machineId === c.machineId && w.owner.owner === c.owner) w.fn();
  };
  const get = (id: string) => {
    const c = containers.get(id);
    if (!c) throw Object.assign(new Error(`no container ${id}`), { statusCode: 404 });
    return c;
  };

  const runtime: ContainerRuntime = {
    async info() {
      const limit = opts.storageSizeLimit ?? true;
      return { dataRoot: '/var/lib/docker', storageSizeLimit: limit, storageDriver: limit ? 'overlay2 on xfs' : 'overlay2 on extfs' };
    },
    async list(owner) {
      calls.push(`list ${owner.machineId} ${owner.owner}`);
      return [...containers.values()]
        .filter((c) => c.machineId === owner.machineId && c.owner === owner.owner)
        .map(({ spec: _s, machineId: _m, owner: _o, log: _l, ...c }) => ({ ...c, ports: { ...c.ports }, boundHostPorts: [...c.boundHostPorts] }));
    },
    async networks(owner) {
      calls.push(`list networks ${owner.machineId} ${owner.owner}`);
      return [...networks.values()]
        .filter((n) => n.labels[LABEL_MACHINE] === String(owner.machineId) && n.labels[LABEL_OWNER] === owner.owner)
        .map((n) => ({ id: n.id, name: n.name, instanceId: n.labels[LABEL_INSTANCE] === undefined ? null : Number(n.labels[LABEL_INSTANCE]) }));
    },
    async removeNetwork(id) {
      calls.push(`remove network ${id}`);
      const n = networks.get(id);
      if (n && [...containers.values()].some((c) => c.spec.network?.name === n.name)) throw new Error(`network ${n.name} is in use`);
      networks.delete(id);
    },
    async ensureImage(image, _login, opts = {}) {
      calls.push(`pull ${image}${opts.fresh ? ' (fresh)' : ''}`);
      if (opts.onProgress) progressSinks.set(image, opts.onProgress);
      try {
        await heldPulls.get(image);
      } finally {
        progressSinks.delete(image);
      }
      const err = failPull.get(image);
      if (err) throw new Error(err);
      images.add(image);
    },
    async create(spec) {
      calls.push(`create ${spec.name}`);
      if (![...networks.values()].some((n) => n.name === spec.network.name)) {
        const nid = `n${String(nextId++).padStart(11, '0')}`;
        networks.set(nid, { ...spec.network, id: nid });
      }
      if ([...containers.values()].some((c) => c.name === spec.name)) throw new NameConflictError(spec.name);
      const id = `c${String(nextId++).padStart(11, '0')}`;
      const label = (k: string) => (spec.labels[k] === undefined ? null : Number(spec.labels[k]));
      containers.set(id, {
        id, name: spec.name, instanceId: label(LABEL_INSTANCE), generation: label(LABEL_GENERATION), status: 'created',
        exitCode: null, finishedAt: null, ports: {}, sshHostPort: sshHostPortOf(spec.labels),
        // As Docker's runtime reports them: the published ports, and the SSH port the agent holds (its labels).
        boundHostPorts: [...Object.values(spec.ports).map((p) => p.hostPort), ...(sshHostPortOf(spec.labels) ? [sshHostPortOf(spec.labels)!.hostPort] : [])],
        spec, machineId: Number(spec.labels[LABEL_MACHINE]), owner: spec.labels[LABEL_OWNER] ?? null, log: '',
      });
      notify(containers.get(id)!);
      return id;
    },
    async start(id) {
      calls.push(`start ${id}`);
      const c = get(id);
      c.status = 'running';
      c.exitCode = null;
      c.ports = Object.fromEntries(Object.entries(c.spec.ports).map(([p, b]) => [p, [{ HostIp: b.hostIp, HostPort: String(b.hostPort) }]]));
      const ssh = sshHostPortOf(c.spec.labels);
      if (ssh) c.ports['22/tcp'] = [{ HostIp: ssh.hostIp, HostPort: String(ssh.hostPort) }];
      c.log += `started ${c.name}\n`;
      notify(c);
    },
    async stop(id) {
      calls.push(`stop ${id}`);
      const c = get(id);
      if (c.status !== 'running') return;
      Object.assign(c, { status: 'exited', exitCode: 0, finishedAt: ++clock, ports: {} });
      notify(c);
    },
    async remove(id) {
      calls.push(`remove ${id}`);
      const c = containers.get(id);
      containers.delete(id);
      if (c) notify(c);
    },
    async logs(id, tail) {
      const lines = get(id).log.split('\n').filter(Boolean);
      return lines.slice(tail === null ? 0 : -tail).map((l) => `${l}\n`).join('');
    },
    async exec(id, argv) {
      calls.push(`exec ${id} ${argv.join(' ')}`);
      const c = get(id);
      if (c.status !== 'running') throw new Error(`exec failed: container ${id} is not running`);
      return { output: `ran ${argv.join(' ')}\n`, exitCode: 0, timedOut: false };
    },
    async commit(id, ref) {
      calls.push(`commit ${id} ${ref}`);
      get(id);
      images.add(ref);
    },
    async push(ref) {
      calls.push(`push ${ref}`);
      const err = failPush.get(ref);
      if (err) throw new Error(err);
    },
    async removeImage(ref) {
      calls.push(`rmi ${ref}`);
      images.delete(ref);
    },
    watch(owner, fn) {
      const w = { owner, fn };
      watchers.add(w);
      return () => watchers.delete(w);
    },
  };

  return {
    runtime,
    containers,
    calls,
    failPull,
    failPush,
    images,
    /** Holds pulls of `image` until the returned function is called. */
    holdPull(image: string): () => void {
      let release!: () => void;
      heldPulls.set(image, new Promise<void>((r) => (release = r)));
      return () => {
        heldPulls.delete(image);
        release();
      };
    },
    /** Hands Docker-style progress messages to the pull of `image` under way (held by holdPull); false if none is. */
    emitProgress(image: string, ...events: DockerProgressEvent[]): boolean {
      const sink = progressSinks.get(image);
      for (const e of events) sink?.(e);
      return sink !== undefined;
    },
    /** The container's main process ends by itself. */
    exit(id: string, code: number, at = ++clock): void {
      const c = get(id);
      Object.assign(c, { status: 'exited', exitCode: code, finishedAt: at, ports: {} });
      c.log += `exited ${code}\n`;
      notify(c);
    },
    networks,
    /** A container made by someone else (an earlier agent of this owner, unless `owner` says another; null: none). */
    addContainer(machineId: number, instanceId: number | null, generation: number, status = 'running', owner: string | null = FAKE_OWNER): string {
      const id = `x${String(nextId++).padStart(11, '0')}`;
      const spec = { name: `other-${id}`, labels: {}, ports: {} } as unknown as ContainerSpec;
      containers.set(id, {
        id, name: spec.name, instanceId, generation, status, exitCode: status === 'exited' ? 0 : null, finishedAt: null,
        boundHostPorts: [], ports: {}, spec, machineId, owner, log: '',
      });
      return id;
    },
    byInstance(instanceId: number): FakeContainer[] {
      return [...containers.values()].filter((c) => c.instanceId === instanceId);
    },
  };
}

export type FakeRuntime = ReturnType<typeof fakeRuntime>;
