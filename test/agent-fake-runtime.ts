/**
 * An in-memory container runtime for the reconcile tests: it keeps containers as the Docker runtime reports them,
 * records every call, and lets a test make a container exit, fail a pull, or hold a pull until released.
 */
import {
  LABEL_GENERATION, LABEL_INSTANCE, LABEL_MACHINE, NameConflictError,
  type ContainerRuntime, type ContainerSpec, type RuntimeContainer,
} from '../src/agent/runtime.js';

export interface FakeContainer extends RuntimeContainer {
  spec: ContainerSpec;
  machineId: number;
  log: string;
}

export function fakeRuntime(opts: { storageSizeLimit?: boolean } = {}) {
  const containers = new Map<string, FakeContainer>();
  const calls: string[] = [];
  const images = new Set<string>(['busybox:latest']);
  const failPull = new Map<string, string>();
  const failPush = new Map<string, string>();
  const heldPulls = new Map<string, Promise<void>>();
  const watchers = new Set<{ machineId: number; fn: () => void }>();
  let nextId = 1;
  let clock = 1_800_000_000;

  const notify = (machineId: number) => {
    for (const w of watchers) if (w.machineId === machineId) w.fn();
  };
  const get = (id: string) => {
    const c = containers.get(id);
    if (!c) throw Object.assign(new Error(`no container ${id}`), { statusCode: 404 });
    return c;
  };

  const runtime: ContainerRuntime = {
    async info() {
      return { dataRoot: '/var/lib/docker', storageSizeLimit: opts.storageSizeLimit ?? false };
    },
    async list(machineId) {
      calls.push(`list ${machineId}`);
      return [...containers.values()]
        .filter((c) => c.machineId === machineId)
        .map(({ spec: _s, machineId: _m, log: _l, ...c }) => ({ ...c, ports: { ...c.ports }, boundHostPorts: [...c.boundHostPorts] }));
    },
    async ensureImage(image, _login, opts = {}) {
      calls.push(`pull ${image}${opts.fresh ? ' (fresh)' : ''}`);
      await heldPulls.get(image);
      const err = failPull.get(image);
      if (err) throw new Error(err);
      images.add(image);
    },
    async create(spec) {
      calls.push(`create ${spec.name}`);
      if ([...containers.values()].some((c) => c.name === spec.name)) throw new NameConflictError(spec.name);
      const id = `c${String(nextId++).padStart(11, '0')}`;
      const label = (k: string) => (spec.labels[k] === undefined ? null : Number(spec.labels[k]));
      containers.set(id, {
        id, name: spec.name, instanceId: label(LABEL_INSTANCE), generation: label(LABEL_GENERATION), status: 'created',
        exitCode: null, finishedAt: null, boundHostPorts: Object.values(spec.ports).map((p) => p.hostPort), ports: {},
        spec, machineId: Number(spec.labels[LABEL_MACHINE]), log: '',
      });
      notify(Number(spec.labels[LABEL_MACHINE]));
      return id;
    },
    async start(id) {
      calls.push(`start ${id}`);
      const c = get(id);
      c.status = 'running';
      c.exitCode = null;
      c.ports = Object.fromEntries(Object.entries(c.spec.ports).map(([p, b]) => [p, [{ HostIp: b.hostIp, HostPort: String(b.hostPort) }]]));
      c.log += `started ${c.name}\n`;
      notify(c.machineId);
    },
    async stop(id) {
      calls.push(`stop ${id}`);
      const c = get(id);
      if (c.status !== 'running') return;
      Object.assign(c, { status: 'exited', exitCode: 0, finishedAt: ++clock, ports: {} });
      notify(c.machineId);
    },
    async remove(id) {
      calls.push(`remove ${id}`);
      const c = containers.get(id);
      containers.delete(id);
      if (c) notify(c.machineId);
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
    watch(machineId, fn) {
      const w = { machineId, fn };
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
    /** The container's main process ends by itself. */
    exit(id: string, code: number, at = ++clock): void {
      const c = get(id);
      Object.assign(c, { status: 'exited', exitCode: code, finishedAt: at, ports: {} });
      c.log += `exited ${code}\n`;
      notify(c.machineId);
    },
    /** A container made by someone else (an earlier agent), with these labels. */
    addContainer(machineId: number, instanceId: number | null, generation: number, status = 'running'): string {
      const id = `x${String(nextId++).padStart(11, '0')}`;
      const spec = { name: `other-${id}`, labels: {}, ports: {} } as unknown as ContainerSpec;
      containers.set(id, {
        id, name: spec.name, instanceId, generation, status, exitCode: status === 'exited' ? 0 : null, finishedAt: null,
        boundHostPorts: [], ports: {}, spec, machineId, log: '',
      });
      return id;
    },
    byInstance(instanceId: number): FakeContainer[] {
      return [...containers.values()].filter((c) => c.instanceId === instanceId);
    },
  };
}

export type FakeRuntime = ReturnType<typeof fakeRuntime>;
