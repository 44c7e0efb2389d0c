/**
 * The simulated container runtime of the emulator's machines: the verbs a real runtime has (src/agent/runtime.ts:
 * list, pull, create, start, stop, remove), over rows in the database (simhost-store.ts), with image pulls that take
 * service time. Like a real runtime it decides nothing: the simulated agent (simhost-agent.ts) tells it what to do.
 */
import type { PortMapT } from '../fleet/agent-protocol-schemas.js';
import type { MachineInfo } from '../fleet/fleet-contract.js';
import type { Tx } from '../platform/db/connect.js';
import { SeededRandom } from '../platform/random.js';
import { containerName } from '../agent/container-spec.js';
import type { RuntimeContainer } from '../agent/runtime.js';
import { directPortSlice } from '../instances/instances-request.js';
import type { DesiredInstanceT } from '../fleet/agent-protocol-schemas.js';
import type { SimContainerRow, SimhostStore } from './simhost-store.js';

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
  return new SeededRandom((seed * 2654435761 + instanceId * 40503 + stateVersion) >>> 0).range(range.min, Math.max(range.min, range.max));
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

/** One machine's runtime inside one transaction. */
export function simRuntime(sim: SimhostStore, tx: Tx, machine: MachineInfo, now: number) {
  const machineId = machine.id;
  let images: Map<string, number | null> | undefined;
  const imagesNow = async () => (images ??= await sim.images(tx, machineId));
  /** A machine with a `stall` fault finishes no pull; one with an `exited` fault crashes every container it starts. */
  const stalled = machine.fault === 'stall';
  const crashing = machine.fault === 'exited';

  return {
    async list(): Promise<RuntimeContainer[]> {
      return (await sim.containers(tx, machineId)).map(runtimeContainer);
    },

    /** Whether the image is on the machine (its pull done). */
    async hasImage(key: string): Promise<boolean> {
      const ready = (await imagesNow()).get(key);
      return ready !== undefined && ready !== null && ready <= now && !stalled;
    },

    /**
     * Starts pulling the image unless a pull of it is under way (or hangs), taking `seconds`; when it will be done, or
     * null while it hangs.
     */
    async pull(key: string, seconds: number): Promise<number | null> {
      const known = await imagesNow();
      if (known.has(key)) return known.get(key)!;
      const readyAt = stalled ? null : now + seconds;
      await sim.putImage(tx, machineId, key, readyAt);
      known.set(key, readyAt);
      return readyAt;
    },

    /** Forgets a fresh pull once its container is made: the next fresh pull of the image pulls again. */
    async dropPull(key: string): Promise<void> {
      await sim.removeImage(tx, machineId, key);
      (await imagesNow()).delete(key);
    },

    /**
     * Creates the instance's container; its id. `created` (not started); `running`: created and started at once (one
     * statement: most creates are of instances meant to run); `exited`: it crashed as it started.
     */
    async create(d: DesiredInstanceT, status: 'created' | 'running' | 'exited' = 'created'): Promise<string> {
      if (status === 'running' && crashing) status = 'exited';
      const exited = status === 'exited';
      const id = await sim.insertContainer(tx, {
        machine_id: machineId, name: containerName(machineId, d.instance_id), instance_id: d.instance_id, generation: d.generation,
        image: d.image, status, exit_code: exited ? CRASH_EXIT_CODE : null, finished_at: exited ? now : null,
        ports: status === 'running' ? JSON.stringify(hostPorts(d, machine)) : '{}', created_at: now,
      });
      return String(id);
    },

    /** Starts (or restarts) a container, bound to the ports of the GPUs `d` holds now. */
    async start(id: string, d: DesiredInstanceT): Promise<void> {
      if (crashing) return this.crash(id);
      await sim.updateContainer(tx, Number(id), { status: 'running', exit_code: null, ports: JSON.stringify(hostPorts(d, machine)) });
    },

    async stop(id: string): Promise<void> {
      await sim.updateContainer(tx, Number(id), { status: 'exited', exit_code: STOP_EXIT_CODE, finished_at: now, ports: '{}' });
    },

    /** The container's main process dies. */
    async crash(id: string): Promise<void> {
      await sim.updateContainer(tx, Number(id), { status: 'exited', exit_code: CRASH_EXIT_CODE, finished_at: now, ports: '{}' });
    },

    async remove(id: string): Promise<void> {
      await sim.removeContainer(tx, Number(id));
    },
  };
}

export type SimRuntime = ReturnType<typeof simRuntime>;
