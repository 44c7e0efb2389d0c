/**
 * The container runtime of a simulated machine whose instances run as real containers (issue 34 item 1): Docker
 * (src/agent/docker-runtime.ts) under the real agent, with what the emulator adds on top.
 * - No GPU here: the container gets no device request (the machine's hardware is declared), but a stand-in
 *   `nvidia-smi` (nvidia-smi-stub.ts) and the CUDA_VISIBLE_DEVICES it would have, so scripts checking for GPUs pass.
 * - The simulated timings: the first pull of an image on the machine (or a fresh one, recycle) takes the simulated
 *   boot time, on the emulator's clock (a virtual clock: until it is advanced past it).
 * - The runtime's faults (simhost-faults.ts, through emu-agents.ts): `exited` stops the instance's container, which
 *   then reads as exited with code 1, and a start fails while the fault stands; `stall` removes the container and
 *   hangs the image's pulls; `recover` ends both and starts the crashed containers again.
 */
import type Dockerode from 'dockerode';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Clock } from '../../platform/clock.js';
import { LABEL_INSTANCE, tarOfFile, type ContainerOwner, type ContainerRuntime, type ContainerSpec } from '../../agent/agent-embedding-contract.js';
import { NVIDIA_SMI_PATH } from './nvidia-smi-stub.js';

/** How often a simulated pull looks at the clock (a virtual one moves only when advanced). */
const PULL_TICK_MS = 200;
/** The exit code a container crashed by the fault `exited` shows, as a simulated host's does. */
export const FAULT_EXIT_CODE = 1;

export interface EmuRuntimeDeps {
  inner: ContainerRuntime;
  docker: Dockerode;
  owner: ContainerOwner;
  clock: Clock;
  /** The stand-in nvidia-smi for a container holding this many GPUs. */
  nvidiaSmi(count: number): string;
  /** The machine's GPU indexes the instance holds (from the agent's latest desired state). */
  gpuIndicesOf(instanceId: number): number[];
  /** Seconds the n-th simulated pull on this machine, starting now, takes (seeded; a slow-pull window's). */
  pullSeconds(n: number): Promise<number>;
}

export type EmuRuntime = ReturnType<typeof emuRuntime>;

export function emuRuntime(d: EmuRuntimeDeps) {
  const { inner, docker, owner, clock } = d;
  /** Images pulled on this machine (a real daemon may have them already: the simulated pull still takes its time). */
  const pulled = new Set<string>();
  const crashed = new Set<number>();
  const stalledImages = new Set<string>();
  let machineStalled = false;
  let pulls = 0;
  let closed = false;
  const instanceOf = (labels: Record<string, string> | undefined) => {
    const v = Number(labels?.[LABEL_INSTANCE]);
    return Number.isInteger(v) ? v : null;
  };
  /** Container id → instance, as last listed or created. */
  const containers = new Map<string, { instanceId: number | null; image?: string }>();

  const runtime: ContainerRuntime = {
    ...inner,
    info: () => inner.info(),
    networks: (o) => inner.networks(o),
    removeNetwork: (id) => inner.removeNetwork(id),
    stop: (id, t) => inner.stop(id, t),
    remove: (id) => inner.remove(id),
    logs: (id, tail) => inner.logs(id, tail),
    exec: (id, argv, o) => inner.exec(id, argv, o),
    commit: (id, ref, pause) => inner.commit(id, ref, pause),
    push: (ref, login) => inner.push(ref, login),
    removeImage: (ref) => inner.removeImage(ref),

    async list(o) {
      const list = await inner.list(o);
      for (const c of list) containers.set(c.id, { ...containers.get(c.id), instanceId: c.instanceId });
      // A crashed container shows the crash's code, not the stop's (137 or 143).
      return list.map((c) => (c.instanceId !== null && crashed.has(c.instanceId) && c.status === 'exited' ? { ...c, exitCode: FAULT_EXIT_CODE } : c));
    },

    async ensureImage(image, login, opts) {
      if (opts?.fresh) pulled.delete(image);
      if (!pulled.has(image)) {
        const seconds = await d.pullSeconds(pulls++);
        let readyAt = clock.now() + seconds;
        const stalled = () => machineStalled || stalledImages.has(image);
        while (stalled() || clock.now() < readyAt) {
          if (closed) throw new Error('the emulated host stopped during the pull');
          // A hung pull (fault stall) takes its whole time again once recover lets it go.
          if (stalled()) readyAt = clock.now() + seconds;
          await sleep(PULL_TICK_MS);
        }
      }
      await inner.ensureImage(image, login, opts);
      pulled.add(image);
    },

    async create(spec: ContainerSpec) {
      const instanceId = instanceOf(spec.labels);
      const gpus = instanceId === null ? [] : [...d.gpuIndicesOf(instanceId)].sort((a, b) => a - b);
      const named = new Set(spec.env.map((e) => e.split('=', 1)[0]));
      const env = [...spec.env];
      // The container's own numbering, as the NVIDIA runtime shows the GPUs it hands over; the host's in NVIDIA's.
      if (!named.has('CUDA_VISIBLE_DEVICES')) env.push(`CUDA_VISIBLE_DEVICES=${gpus.map((_, i) => i).join(',')}`);
      if (!named.has('NVIDIA_VISIBLE_DEVICES')) env.push(`NVIDIA_VISIBLE_DEVICES=${gpus.join(',')}`);
      const id = await inner.create({ ...spec, env, gpuDeviceIds: null });
      containers.set(id, { instanceId, image: spec.image });
      await docker.getContainer(id).putArchive(tarOfFile(NVIDIA_SMI_PATH, d.nvidiaSmi(gpus.length), Date.now() / 1000, 0o755), { path: '/' });
      return id;
    },

    async start(id) {
      const instanceId = containers.get(id)?.instanceId;
      if (instanceId != null && crashed.has(instanceId)) {
        throw new Error(`the container exited at start with code ${FAULT_EXIT_CODE} (emulator fault exited; recover ends it)`);
      }
      await inner.start(id);
    },
  };

  /** The owner's containers of these instances (all of the machine's for `undefined`). */
  async function containersOf(instanceIds: number[] | undefined) {
    const list = await inner.list(owner);
    return list.filter((c) => instanceIds === undefined || (c.instanceId !== null && instanceIds.includes(c.instanceId)));
  }

  return {
    runtime,

    /** Fault `exited`: the instances' containers stop, and read as exited with code 1 until `recover`. */
    async crash(instanceIds: number[]): Promise<void> {
      for (const id of instanceIds) crashed.add(id);
      for (const c of await containersOf(instanceIds)) if (c.status === 'running') await inner.stop(c.id, 0);
    },

    /** Fault `stall`: the containers are removed, and pulling their images (all, for the machine) hangs. */
    async stall(instanceIds: number[] | undefined): Promise<void> {
      if (instanceIds === undefined) machineStalled = true;
      for (const c of await containersOf(instanceIds)) {
        const image = containers.get(c.id)?.image ?? (await docker.getContainer(c.id).inspect().then((i) => i.Config.Image, () => undefined));
        if (image) {
          pulled.delete(image);
          if (instanceIds !== undefined) stalledImages.add(image);
        }
        await inner.remove(c.id);
      }
      if (instanceIds === undefined) pulled.clear();
    },

    /** `recover`: the faults end; crashed containers start again. */
    async recover(instanceIds: number[] | undefined): Promise<void> {
      const ids = instanceIds ?? [...crashed];
      for (const id of ids) crashed.delete(id);
      if (instanceIds === undefined) {
        machineStalled = false;
        stalledImages.clear();
      } else {
        for (const c of containers.values()) if (c.instanceId !== null && instanceIds.includes(c.instanceId) && c.image) stalledImages.delete(c.image);
      }
      for (const c of await containersOf(ids)) if (c.status === 'exited') await inner.start(c.id);
    },

    close(): void {
      closed = true;
    },
  };
}
