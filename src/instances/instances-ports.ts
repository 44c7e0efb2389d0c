/**
 * What the instances feature needs from other features, as narrow interfaces. The composition root (services.ts)
 * passes the real services; each port names the one or two calls used.
 */
import type { Tx } from '../platform/db/connect.js';
import type { Scope } from '../platform/auth.js';
import type { TemplateForCreate } from '../templates/template-merge.js';
import type { VolumeInfo } from './instances-request.js';
import type { InstanceRow } from './instances-store.js';

export interface TemplatesPort {
  /** The template with this hash_id that the scope may use (own, team's or public), credentials decrypted. */
  getForCreate(hashId: string, scope: Scope, tx?: Tx): Promise<TemplateForCreate | undefined>;
  /** Counts an instance created from it (`count_created`, `recent_create_date`). */
  recordUse(templateId: number, at: number, tx?: Tx): Promise<void>;
  /** The same as getForCreate, by the template's numeric id (`update instance --template_id`). */
  getForCreateById(id: number, scope: Scope, tx?: Tx): Promise<TemplateForCreate | undefined>;
}

/** The account environment variables (`/api/v0/secrets/`) a new instance of this scope starts with. */
export interface AccountEnvPort {
  environmentOf(scope: Scope, tx?: Tx): Promise<Record<string, string>>;
}

export interface SshKeysPort {
  /** Public keys registered on the account (a VM needs at least one at creation). */
  publicKeysOf(userId: number, tx?: Tx): Promise<string[]>;
}

/**
 * The volumes feature: attach (or create and attach) the request's `volume_info` to the new instance, inside the
 * creation transaction; throw ApiError for a volume that does not exist or is not the caller's.
 */
export interface VolumesPort {
  /** Returns the volume as the instance shows it (for `create_new`, the new volume's id in place of the offer's). */
  attachAtCreate(tx: Tx, req: { instanceId: number; machineId: number; scope: Scope; volume: VolumeInfo }): Promise<VolumeInfo | void>;
  /** Detaches whatever the instance had attached (destroy). */
  detachAll(tx: Tx, instanceId: number): Promise<void>;
}

/**
 * HOOK for real hosts (src/agent-server/): `request_logs` on an instance of a machine run by `gpuplane agent` asks its agent
 * for the container's real log instead of the simulated boot log.
 */
export interface AgentLogsPort {
  /** A renter asked for an instance's log (`request_logs`); a real host's machine lists it for its agent. */
  requested(req: { logRequestId: number; instanceId: number; machineId: number | null; tail: number | null; filter: string | null }): Promise<void>;
  /**
   * The agent's answer to that log request, waiting a few seconds for it; undefined when the instance is not on a
   * real host. Throws ApiError `not_found` while the agent has not answered yet (the client retries).
   */
  textOf(logRequestId: number): Promise<string | undefined>;
}

/** What a fault makes a simulated host do wrong: crash containers, hang pulls, say nothing, or behave again. */
export type SimHostFault = 'exited' | 'stall' | 'silent' | 'recover';

/**
 * HOOK for the emulator's simulated hosts (src/emulator/simulated-hosts/): the instance and machine faults (contract §2) act on a
 * simulated machine's runtime and agent, and the instances follow from what its agent then reports (or does not).
 */
export interface SimHostPort {
  /** Serializes the machine's simulated runtime until `tx` ends (PostgreSQL): taken first, before any instance row. */
  lockMachine(tx: Tx, machineId: number): Promise<void>;
  /** The fault on these instances of the machine; `wholeMachine`: on the machine itself (every pull on it, say). */
  fault(tx: Tx, machineId: number, fault: SimHostFault, instances: InstanceRow[], now: number, wholeMachine?: boolean): Promise<void>;
  /** The machine's agent makes a pass now, as after an event of its runtime, and reports; how many instances changed. */
  step(tx: Tx, machineId: number, now: number): Promise<number>;
}
