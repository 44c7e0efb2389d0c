/**
 * The SSH gateway's public face: which ports of the gateway an instance has (README "Connecting to an instance").
 * Pure, so the instance view (`ssh_host`/`ssh_port`), copy (`dst_port`) and the gateway's own listeners agree without
 * asking each other: the ports follow from the instance id, its runtype and two settings.
 *
 * Slot k = id mod floor(span / 3) of the range GPUPLANE_GATEWAY_PORTS; its three ports start at first + 3k:
 * - first:     `ssh_port`. SSH runtypes log in there; for Jupyter runtypes it is Jupyter's own port (a later issue);
 * - first + 1: where the `vastai` client's ssh-url logs in for Jupyter runtypes (it adds 1 to `ssh_port`);
 * - first + 2: the copy port (`vastai copy`): always the agent's own SSH server, which has the `vastai_kaalia` user.
 * Ids beyond the range wrap: two live instances whose ids differ by a multiple of the slot count share ports, and the
 * gateway serves the older (lower id) of them (gateway-listeners.ts).
 */
import type { Config } from '../config.js';
import type { AuditService } from '../audit/audit-service.js';

/** The settings the mapping reads. */
export type GatewayAddressing = Pick<Config, 'gatewayHost' | 'gatewayPorts'>;

export interface GatewayPorts {
  /** The host renters connect to (GPUPLANE_GATEWAY_HOST). */
  ssh_host: string;
  /** What the instance view shows as `ssh_port`. */
  ssh_port: number;
  /** Where SSH logs in: `ssh_port` for SSH runtypes, `ssh_port + 1` for Jupyter runtypes (the client adds 1). */
  ssh_login_port: number;
  /** Where `vastai copy` reaches the instance's rsync daemon over SSH (user `vastai_kaalia`). */
  copy_port: number;
}

/** Ports per instance: SSH or Jupyter, SSH for Jupyter runtypes, copy. */
export const PORTS_PER_INSTANCE = 3;

/** Whether an instance of this runtype has ports at the gateway (every runtype but `args`). */
export function proxiedRuntype(runtype: string): boolean {
  return runtype !== 'args';
}

/** Jupyter runtypes: the client's ssh-url adds 1 to `ssh_port` (client-compat-connect.md). */
export function jupyterRuntype(runtype: string): boolean {
  return runtype.includes('jupyter');
}

/** How many instances the range holds at once (floor(span / 3)). */
export function gatewaySlots(range: Config['gatewayPorts']): number {
  return Math.floor((range.last - range.first + 1) / PORTS_PER_INSTANCE);
}

/** The instance's ports at the gateway, or null for a runtype without SSH (`args`). */
export function gatewayPorts(config: GatewayAddressing, instanceId: number, runtype: string): GatewayPorts | null {
  if (!proxiedRuntype(runtype)) return null;
  const slot = instanceId % gatewaySlots(config.gatewayPorts);
  const first = config.gatewayPorts.first + PORTS_PER_INSTANCE * slot;
  return {
    ssh_host: config.gatewayHost,
    ssh_port: first,
    ssh_login_port: jupyterRuntype(runtype) ? first + 1 : first,
    copy_port: first + 2,
  };
}

/** What a gateway port leads to: the instance's SSH endpoint, or the agent's own SSH server (copy). */
export type GatewayRole = 'ssh' | 'copy';

/** The gateway's entries for an instance: port → role (no entry for Jupyter's own port, not served yet). */
export function gatewayEntries(config: GatewayAddressing, instanceId: number, runtype: string): { port: number; role: GatewayRole }[] {
  const p = gatewayPorts(config, instanceId, runtype);
  if (!p) return [];
  return [{ port: p.ssh_login_port, role: 'ssh' }, { port: p.copy_port, role: 'copy' }];
}

/** A live instance as the gateway needs it (the root reads them from the instances and machines features). */
export interface GatewayInstance {
  id: number;
  runtype: string;
  userId: number;
  teamId: number | null;
  machineId: number | null;
  actualStatus: string | null;
  /** Its machine is the emulator's simulated one (no container to reach), not a `gpuplane agent` host. */
  simulated: boolean;
}

/** What the gateway reads of the instances, wired by the root (services.ts). */
export interface GatewayInstancesPort {
  /** Every live instance (not destroyed) with its runtype; the gateway keeps the proxied ones. */
  live(): Promise<Pick<GatewayInstance, 'id' | 'runtype'>[]>;
  /** One live instance, read when a renter connects; undefined once destroyed. */
  find(id: number): Promise<GatewayInstance | undefined>;
  /**
   * A number that changes whenever an instance is created, changes state or is destroyed, in any process (the latest
   * instance event's id): the gateway reads the list again only when it moved.
   */
  changeMark(): Promise<number>;
  /** Resolves at the next change in this process, or after `ms` (the instances feature's events hub). */
  nextChange(ms: number): Promise<void>;
}

export type GatewayAudit = Pick<AuditService, 'record'>;

/** The audit log's action for a connection through the gateway. */
export const SSH_SESSION_ACTION = 'instance.ssh_session';
