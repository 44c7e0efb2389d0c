/**
 * The simulated container runtime of the emulator's machines: the verbs a real runtime has (src/agent/runtime.ts:
 * list, pull, create, start, stop, remove), over rows in the database (simhost-store.ts), with image pulls that take
 * service time. Like a real runtime it decides nothing: the simulated agent (simhost-agent.ts) tells it what to do.
 *
 * Why it is not the agent's `ContainerRuntime` (issue 30): simulated and real machines share the agent's decisions
 * (reconcile-plan.ts `plan` and `observe`, pure) and the server's application of reports, not the runtime's shape.
 * `ContainerRuntime` is one asynchronous call per action of one machine, awaited in turn by reconciler.ts, and
 * `ensureImage` returns once the image is there; behind it, a runtime kept in the database would cost a round trip
 * per action and a pass per machine, and a pull that takes service time would hold its pass open. A simulated step
 * passes up to STEP_BATCH machines at once: it loads their runtimes in three statements, acts on them here in memory
 * (a pull only records when it finishes, and the agent passes again then), and writes everything back a statement per
 * kind of change (docs/PERFORMANCE.md, "Simulated agents' steps set-based": an advance's statements 5,066 → 804 on
 * PostgreSQL). Implementing `ContainerRuntime` would undo that; so this interface is the runtime's verbs, synchronous,
 * over one pass's memory.
 */
import type { PortMapT } from '../../protocol/agent-protocol-schemas.js';
import type { MachineInfo } from '../../machines/machines-contract.js';
import { SeededRandom } from '../../platform/random.js';
import { containerName } from '../../agent/container-spec.js';
import type { RuntimeContainer } from '../../agent/runtime.js';
import { directPortSlice } from '../../instances/instances-hosts-contract.js';
import type { DesiredInstanceT } from '../../protocol/agent-protocol-schemas.js';
import type { RuntimeChanges, SimContainerRow } from './simhost-store.js';

/** The exit status of a container that crashed (fault `exited`, or a start on a machine whose containers crash). */
export const CRASH_EXIT_CODE = 1;
/** The exit status of a container stopped by the agent (its entrypoint traps SIGTERM and exits 0). */
export const STOP_EXIT_CODE = 0;

/** A container row as a runtime lists it. */
export function runtimeContainer(r: SimContainerRow): RuntimeContainer {
  const ports = JSON.parse(r.ports) as PortMapT;
  return {
    id: String(r.id),
    name: r.name,
    instanceId: r.instance_id,
    generation: r.generation,
    status: r.status,
    exitCode: r.exit_code,
    finishedAt: r.finished_at === null ? null : Number(r.finished_at),
    boundHostPorts: Object.values(ports).flatMap((list) => list.map((b) => Number(b.HostPort))),
    ports: r.status === 'running' ? ports : {},
  };
}

/**
 * Where the instance's image is kept on the machine: its reference, or, for a generation pulled afresh (recycle), a
 * key of that generation's own, so the pull happens even though the machine has the image.
 */
export function pullKey(d: Pick<DesiredInstanceT, 'image' | 'repull' | 'instance_id' | 'generation'>): string {
  return d.repull ? `${d.image} (fresh pull for instance ${d.instance_id}, generation ${d.generation})` : d.image;
}

/**
 * The seeded boot time of one boot of an instance (`simBootSeconds`, reproducible from the seed): what the emulator
 * has always taken from creation (or start) to running. `stateVersion` is the instance's as its boot began.
 */
export function bootSeconds(seed: number, range: { min: number; max: number }, instanceId: number, stateVersion: number): number {
  const max = Math.max(range.min, range.max);
  const drawn = new SeededRandom((seed * 2654435761 + instanceId * 40503 + stateVersion) >>> 0).range(range.min, max);
  return Math.min(max, Math.max(range.min, Math.round(drawn)));
}

/**
 * The host ports of a running container: taken in order from the port slices of the GPUs it holds (each GPU owns an
 * equal slice of the machine's direct range), so containers on one machine never clash. Creation refuses more ports
 * than the slices hold. Bound at each start, as the instance's GPUs may differ from one start to the next.
 */
export function hostPorts(d: Pick<DesiredInstanceT, 'ports' | 'gpu_indices'>, machine: Pick<MachineInfo, 'direct_port_start' | 'direct_port_count' | 'num_gpus'>): PortMapT {
  const slice = directPortSlice(machine);
  const free = [...d.gpu_indices].sort((a, b) => a - b).flatMap((g) => Array.from({ length: slice }, (_, i) => machine.direct_port_start + g * slice + i));
  const ports: PortMapT = {};
  d.ports.forEach((p, i) => {
    if (i < free.length) ports[p] = [{ HostIp: '0.0.0.0', HostPort: String(free[i]) }];
  });
  return ports;
}

/**
 * One machine's runtime for one pass of its agent: its containers and images as the pass loaded them
 * (simhost-store.ts `load`), changed in memory as the agent acts, and written back with every machine's of the pass
 * (`changes`, simhost-store.ts `saveRuntimes`): a few statements for all, not one per action. A container made in the
 * pass has a provisional id (below 0) until it is written.
 */
export function simRuntime(machine: MachineInfo, now: number, loaded: { containers: readonly SimContainerRow[]; images: ReadonlyMap<string, number | null> }) {
  const machineId = machine.id;
  const before = new Map(loaded.containers.map((r) => [r.id, r]));
  const containers: SimContainerRow[] = loaded.containers.map((r) => ({ ...r }));
  const images = new Map(loaded.images);
  let provisional = 0;
  /** A machine with a `stall` fault finishes no pull; one with an `exited` fault crashes every container it starts. */
  const stalled = machine.fault === 'stall';
  const crashing = machine.fault === 'exited';
  const set = (id: string, patch: Partial<SimContainerRow>) => {
    const c = containers.find((x) => x.id === Number(id));
    if (c) Object.assign(c, patch);
  };

  return {
    list(): RuntimeContainer[] {
      return containers.map(runtimeContainer);
    },

    /** Whether the image is on the machine (its pull done). */
    hasImage(key: string): boolean {
      const ready = images.get(key);
      return ready !== undefined && ready !== null && ready <= now && !stalled;
    },

    /**
     * Starts pulling the image unless a pull of it is under way (or hangs), taking `seconds`; when it will be done, or
     * null while it hangs.
     */
    pull(key: string, seconds: number): number | null {
      if (images.has(key)) return images.get(key)!;
      const readyAt = stalled ? null : now + seconds;
      images.set(key, readyAt);
      return readyAt;
    },

    /** Forgets a fresh pull once its container is made: the next fresh pull of the image pulls again. */
    dropPull(key: string): void {
      images.delete(key);
    },

    /**
     * The image is on the machine from now, unless it is there or being pulled (a boot timed by a transition rule
     * does not wait for its pull: emu-transitions/).
     */
    markPulled(key: string): void {
      if (!images.has(key) && !stalled) images.set(key, now);
    },

    /** When a boot's gate opens (transitions-rules.ts `gateKey`): undefined when it has none, null while the machine stalls. */
    gateAt(key: string): number | null | undefined {
      return images.get(key);
    },

    /** Sets when a boot's gate opens; whether it is open now (a stalled machine opens none). */
    setGate(key: string, at: number): boolean {
      images.set(key, at);
      return at <= now && !stalled;
    },

    /** The keys of the images, pulls and gates on the machine. */
    imageKeys(): string[] {
      return [...images.keys()];
    },

    /**
     * Creates the instance's container. `created` (not started); `running`: created and started at once (most creates
     * are of instances meant to run); `exited`: it crashed as it started.
     */
    create(d: DesiredInstanceT, status: 'created' | 'running' | 'exited' = 'created'): void {
      if (status === 'running' && crashing) status = 'exited';
      const exited = status === 'exited';
      containers.push({
        id: --provisional, machine_id: machineId, name: containerName(machineId, d.instance_id), instance_id: d.instance_id, generation: d.generation,
        image: d.image, status, exit_code: exited ? CRASH_EXIT_CODE : null, finished_at: exited ? now : null,
        ports: status === 'running' ? JSON.stringify(hostPorts(d, machine)) : '{}', created_at: now,
      });
    },

    /** Starts (or restarts) a container, bound to the ports of the GPUs `d` holds now. */
    start(id: string, d: DesiredInstanceT): void {
      if (crashing) return this.crash(id);
      set(id, { status: 'running', exit_code: null, ports: JSON.stringify(hostPorts(d, machine)) });
    },

    stop(id: string): void {
      set(id, { status: 'exited', exit_code: STOP_EXIT_CODE, finished_at: now, ports: '{}' });
    },

    /** The container's main process dies. */
    crash(id: string): void {
      set(id, { status: 'exited', exit_code: CRASH_EXIT_CODE, finished_at: now, ports: '{}' });
    },

    remove(id: string): void {
      const i = containers.findIndex((x) => x.id === Number(id));
      if (i >= 0) containers.splice(i, 1);
    },

    /** What the pass changed, to write back; the new containers' ids are set on this runtime's rows as they are written. */
    changes(): RuntimeChanges {
      const changed = (c: SimContainerRow, b: SimContainerRow) =>
        c.status !== b.status || c.exit_code !== b.exit_code || c.finished_at !== b.finished_at || c.ports !== b.ports;
      const kept = new Set(containers.map((c) => c.id));
      return {
        machineId,
        inserts: containers.filter((c) => c.id < 0),
        updates: containers.filter((c) => c.id > 0 && changed(c, before.get(c.id)!))
          .map(({ id, status, exit_code, finished_at, ports }) => ({ id, status, exit_code, finished_at, ports })),
        deletes: [...before.keys()].filter((id) => !kept.has(id)),
        imagePuts: [...images].filter(([key, readyAt]) => loaded.images.get(key) !== readyAt || !loaded.images.has(key)),
        imageDrops: [...loaded.images.keys()].filter((key) => !images.has(key)),
      };
    },
  };
}

export type SimRuntime = ReturnType<typeof simRuntime>;
