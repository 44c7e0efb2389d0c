/**
 * What the reconcile loop needs of a container runtime: a few verbs over containers found by label. Docker
 * (docker-runtime.ts) is the runtime. The emulator's simulated hosts plan with the same pure functions
 * (reconcile-plan.ts) over a runtime of their own, batched across machines (src/emulator/simulated-hosts/
 * simhost-runtime.ts says why it is not this interface). A runtime decides nothing: it does what it is told and
 * reports what is.
 */
import type { DockerLoginT, PortMapT } from '../protocol/agent-protocol-schemas.js';
import type { VolumeRuntime } from './volume-runtime.js';
import type { DockerProgressEvent } from '../protocol/pull-progress.js';

/** Labels every managed container carries: how the agent finds its containers after any restart. */
export const LABEL_MACHINE = 'gpuplane.machine_id';
export const LABEL_INSTANCE = 'gpuplane.instance_id';
export const LABEL_GENERATION = 'gpuplane.generation';
/**
 * The agent's identity (owner.ts), on its containers and networks beside the machine's id. A machine id alone is not
 * unique on a Docker daemon: every fresh server numbers its first machine alike, so two control planes' agents on
 * one daemon (staging and production, two CI jobs) would take each other's containers for their own.
 */
export const LABEL_OWNER = 'gpuplane.owner';
/**
 * Where the agent itself listens for an SSH instance's `22/tcp` (direct-ssh.ts): the host address and port, which
 * Docker does not publish, so that any image, with or without sshd, is reachable directly.
 */
export const LABEL_SSH_HOST_IP = 'gpuplane.ssh_host_ip';
export const LABEL_SSH_HOST_PORT = 'gpuplane.ssh_host_port';

/** The SSH address a container's labels give the agent to hold (LABEL_SSH_HOST_*), or null. */
export function sshHostPortOf(labels: Record<string, string> | undefined): { hostIp: string; hostPort: number } | null {
  const ip = labels?.[LABEL_SSH_HOST_IP];
  const port = labels?.[LABEL_SSH_HOST_PORT];
  if (!ip || !port || !/^[1-9][0-9]{0,4}$/.test(port) || Number(port) > 65535) return null;
  return { hostIp: ip, hostPort: Number(port) };
}

/** Whose containers: an agent lists, watches and removes only those carrying both labels, exactly. */
export interface ContainerOwner {
  machineId: number;
  owner: string;
}

/** The labels that mark a container or network as the owner's. */
export function ownerLabels(o: ContainerOwner): Record<string, string> {
  return { [LABEL_MACHINE]: String(o.machineId), [LABEL_OWNER]: o.owner };
}

/** Whether `labels` prove the owner's: both labels present and equal, as text (Docker's filter is checked again). */
export function ownedBy(labels: Record<string, string> | undefined, o: ContainerOwner): boolean {
  return labels?.[LABEL_MACHINE] === String(o.machineId) && labels?.[LABEL_OWNER] === o.owner;
}

/** A container of the machine, as the runtime sees it now. */
export interface RuntimeContainer {
  id: string;
  name: string;
  /** From the labels; null when a label is missing or malformed (such a container is removed as an orphan). */
  instanceId: number | null;
  generation: number | null;
  /** Docker's vocabulary: `created`, `running`, `paused`, `restarting`, `removing`, `exited`, `dead`. */
  status: string;
  /** The main process's exit status once it has stopped, else null. */
  exitCode: number | null;
  /** When it last stopped, Unix seconds, or null if it never has. */
  finishedAt: number | null;
  /** Host ports the container is bound to, running or not (its configuration): reserved for it. */
  boundHostPorts: number[];
  /** The real mapping while running, else `{}`; includes `22/tcp` when the agent holds it (sshHostPort). */
  ports: PortMapT;
  /** The host address and port the agent listens on for the container's SSH (direct-ssh.ts), from its labels. */
  sshHostPort?: { hostIp: string; hostPort: number } | null;
}

/** A container to create: everything about it decided by the agent (container-spec.ts), nothing left to the runtime. */
export interface ContainerSpec {
  name: string;
  image: string;
  labels: Record<string, string>;
  /** `NAME=value` entries. */
  env: string[];
  /** Null: the image's own entrypoint. */
  entrypoint: string[] | null;
  /** Null: the image's own command. */
  cmd: string[] | null;
  hostname: string | null;
  /** GPU indices for the device request; null: no GPU devices (a host without the NVIDIA runtime). */
  gpuDeviceIds: string[] | null;
  /** CPU quota in billionths of a CPU. */
  nanoCpus: number;
  /** Relative CPU weight under contention (1024 = one full machine share's default). */
  cpuShares: number;
  memoryBytes: number;
  diskGb: number;
  /** Container port (`22/tcp`) → where it is published. */
  ports: Record<string, { hostIp: string; hostPort: number }>;
  /** The instance's own network, made before the container when missing (docs/HOST-SECURITY.md). */
  network: NetworkSpec;
  /** The most processes and threads the container may hold at once. */
  pidsLimit: number;
  /** The only capabilities kept; every other one is dropped, and no process gains privileges (no-new-privileges). */
  capabilities: string[];
  /** The container log's rotation: each file at most this many MiB, and at most this many files. */
  log: { maxSizeMb: number; maxFiles: number };
  /** The agent's volumes (volumes.ts) mounted into it: the Docker volume's name → the path inside the container. */
  mounts?: { volume: string; target: string }[];
}

/** A network of one instance: a bridge of its own, labelled as its container, with a host interface name we choose. */
export interface NetworkSpec {
  name: string;
  /** The host's interface name (at most 15 characters), under the prefix the host firewall rule names. */
  bridge: string;
  labels: Record<string, string>;
}

/** A network of the owner's, as listed. */
export interface RuntimeNetwork {
  id: string;
  name: string;
  /** From its label; null when missing or malformed (removed once no container uses it). */
  instanceId: number | null;
}

export interface RuntimeInfo {
  /** Where images and containers live on the host (for the free-disk figure). */
  dataRoot: string;
  /** Whether a per-container disk size limit can be asked for. */
  storageSizeLimit: boolean;
  /** The storage driver and what it sits on (`overlay2 on extfs`), for the messages about disk limits. */
  storageDriver: string;
}

export interface ContainerRuntime {
  info(): Promise<RuntimeInfo>;
  /** Every container labelled as the owner's (LABEL_MACHINE and LABEL_OWNER, exactly), in any state. */
  list(owner: ContainerOwner): Promise<RuntimeContainer[]>;
  /** The owner's instance networks (labelled as its containers). */
  networks(owner: ContainerOwner): Promise<RuntimeNetwork[]>;
  /** Removes a network; one already gone is not an error, one still in use is. */
  removeNetwork(id: string): Promise<void>;
  /**
   * Makes the image available: a local one is used as it is; otherwise it is pulled, with the login when given.
   * `fresh`: pulled from its registry even when the host has it (recycle). `onProgress`: each message of the pull's
   * progress stream, as the runtime's registry client gives it (protocol/pull-progress.ts sums them).
   */
  ensureImage(image: string, login: DockerLoginT | null, opts?: { fresh?: boolean; onProgress?: (e: DockerProgressEvent) => void }): Promise<void>;
  /**
   * Creates the container (not started), on its network (made first when missing); its id. Throws NameConflictError
   * when the name is taken.
   */
  create(spec: ContainerSpec): Promise<string>;
  start(id: string): Promise<void>;
  /** Stops a running container, giving it `timeoutS` seconds after SIGTERM. */
  stop(id: string, timeoutS: number): Promise<void>;
  /**
   * Writes a file into the container's filesystem (running or not) without running anything in it, so an image
   * without a shell gets it too: the notice before a stop (STOP_NOTICE_PATH). Parent directories are made.
   */
  writeFile?(id: string, path: string, content: string): Promise<void>;
  /** Removes a container in any state, with its volumes. A container already gone is not an error. */
  remove(id: string): Promise<void>;
  /** The log, stdout and stderr as written; `tail` lines at most (null: all). */
  logs(id: string, tail: number | null): Promise<string>;
  /**
   * Runs `argv` in the running container (no shell, working directory `/`), stdout and stderr as written, cut to
   * `maxChars`; resolves when it ends, or after `timeoutS` with what it printed so far and `timedOut`.
   */
  exec(id: string, argv: string[], opts: { maxChars: number; timeoutS: number }): Promise<{ output: string; exitCode: number | null; timedOut: boolean }>;
  /** Commits the container as the image `ref` (`registry/repo:tag`), pausing it meanwhile when `pause`. */
  commit(id: string, ref: string, pause: boolean): Promise<void>;
  /** Pushes the image `ref` to its registry, with the login when given. */
  push(ref: string, login: DockerLoginT | null): Promise<void>;
  /** Removes the image `ref` from the host (a tag made by commit). An image already gone is not an error. */
  removeImage(ref: string): Promise<void>;
  /**
   * Names of the containers labelled with this machine id and no owner at all: made by an agent from before owner
   * labels. Never acted on, only reported: the machine id they carry does not prove them this agent's (an upgraded
   * agent makes its instances' containers anew; the operator removes these, docs/HOST-SECURITY.md).
   */
  unowned?(machineId: number): Promise<string[]>;
  /** Calls `onChange` whenever a container of the owner's changes; returns a function that stops watching. */
  watch?(owner: ContainerOwner, onChange: () => void): () => void;
  /** The runtime's volumes (volumes.ts); absent: it has none, and an instance that mounts one cannot be made. */
  volumes?: VolumeRuntime;
}

/** The name is taken: a container for this instance exists (made by an earlier pass or another agent process). */
export class NameConflictError extends Error {}
/** The start failed because a published host port is in use by something else. */
export class PortInUseError extends Error {}
