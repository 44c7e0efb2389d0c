import type { Generated } from 'kysely';

/**
 * The simulated hosts of the emulator (src/emulator/simulated-hosts/): their container runtime and their agent's memory live in the
 * database, so any server process on the same PostgreSQL steps them, and a file-backed emulator resumes them after a
 * restart. Times Unix seconds (service time); booleans 0/1; JSON as text.
 */

/** A container of a simulated machine, as a container runtime keeps it (Docker's vocabulary, src/agent/runtime.ts). */
export interface SimContainersTable {
  id: Generated<number>;
  machine_id: number;
  /** `gpuplane-<machine>-<instance>` (src/agent/container-spec.ts): unique, as Docker refuses a second container of a name. */
  name: string;
  /** The labels: the instance and the generation it was made for. */
  instance_id: number | null;
  generation: number | null;
  image: string;
  /** `created`, `running` or `exited`. */
  status: string;
  exit_code: number | null;
  /** When it last stopped, or null if it never has. */
  finished_at: number | null;
  /** JSON: the real port mapping while running (`{"22/tcp": [{HostIp, HostPort}]}`), `{}` otherwise. */
  ports: string;
  created_at: number;
}

/** An image on a simulated machine, or one being pulled there. */
export interface SimImagesTable {
  machine_id: number;
  /** The image reference; a fresh pull (recycle) is kept under a key of its own (simhost-runtime.ts `pullKey`). */
  image: string;
  /** When the pull is done (the image is on the machine from then on); null while the pull hangs (fault `stall`). */
  ready_at: number | null;
}

/**
 * What the simulated agent remembers of an instance (the real agent's `instances.json`, reconcile-plan.ts
 * InstanceRecord) and the emulator's fault on it.
 */
export interface SimInstancesTable {
  instance_id: number;
  machine_id: number;
  /** The record: null until the agent made (or adopted) a container for the instance. */
  generation: number | null;
  boot: number | null;
  stopped: number | null;
  /** 1 while the agent says nothing about the instance (faults `unknown`, `offline`), until `recover`. */
  silent: number;
  /** 1 while a crash of its container is pending (fault `exited`): the agent's next pass finds it exited. */
  crash: number;
}

/**
 * Work due for a simulated machine's agent: a desired-state change (due after the provisioning delay) or a pull that
 * finishes. Insert-only for writers (no row a writer updates, so none a writer waits on); the step deletes what it did.
 */
export interface SimDueTable {
  id: Generated<number>;
  machine_id: number;
  due_at: number;
}

export interface SimhostTables {
  sim_containers: SimContainersTable;
  sim_images: SimImagesTable;
  sim_instances: SimInstancesTable;
  sim_due: SimDueTable;
}
