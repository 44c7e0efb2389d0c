/**
 * The instances feature and the hosts that run its machines: what it asks of a machine's host (`InstanceHostsPort`:
 * run a command in a container, take a snapshot, send a log) and what it lets a host's implementation read and do
 * (`InstancesForHosts`). The feature does not know which kind of host answers: the root wires the port's
 * implementation, and hands `InstancesForHosts` to it.
 */
import type { Tx } from '../platform/db/connect.js';
import type { InstanceEventRow, InstanceRow } from './instances-store.js';

export type { InstanceEventRow, InstanceRow };
/** From a desired-state change to the host acting on it: the host accepting the container (provisioning). */
export { PROVISION_DELAY_S } from './instances-lifecycle.js';
/** Each GPU's slice of its machine's direct port range: where a host publishes an instance's ports. */
export { directPortSlice } from './instances-request.js';

/** A renter's command for an instance's running container (`execute`, already parsed into argv). */
export interface CommandToRun {
  instanceId: number;
  machineId: number;
  argv: string[];
  /** When the instance was created: its container's files date from then. */
  instanceCreatedAt: number;
}

/** A renter's request for an instance's log (`request_logs`): what to send of it. */
export interface LogRequest {
  logRequestId: number;
  instanceId: number;
  /** Null until the instance is placed on a machine. */
  machineId: number | null;
  tail: number | null;
  filter: string | null;
}

/** What the instances feature asks of the host of an instance's machine. */
export interface InstanceHostsPort {
  /**
   * The command, inside the request's transaction: its output when the host answers at once, or undefined when the
   * host's agent answers later (the request is listed in its desired state until then, instances-commands.ts `agent`).
   */
  execute(tx: Tx, cmd: CommandToRun): Promise<string | undefined>;
  /** Throws ApiError when the instance's host cannot commit and push its container (`take snapshot`). */
  assertCanSnapshot(tx: Tx, req: { instanceId: number; machineId: number }): Promise<void>;
  /** A renter asked for the instance's log: its host is told. */
  logsRequested(req: LogRequest): Promise<void>;
  /**
   * The log as the host sent it, `filter` and `tail` applied. Throws ApiError `not_found` while the host has not
   * answered yet (the clients retry), and when there is nothing to send.
   */
  logText(req: Omit<LogRequest, 'machineId'>): Promise<string>;
}

/** What a host's implementation may read of instances and do to them, inside its own transaction. */
export interface InstancesForHosts {
  /** Runs `fn` in a transaction (rerun when PostgreSQL breaks a deadlock), then wakes whoever waits on instances. */
  write<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  /** The live instance, not locked. */
  find(id: number, tx: Tx): Promise<InstanceRow | undefined>;
  /** The instance, live or destroyed. */
  findAny(id: number, tx?: Tx): Promise<InstanceRow | undefined>;
  /** The live instance, its row locked until `tx` ends (PostgreSQL): after its machine's (MachinesApi.lockMachine). */
  lock(id: number, tx: Tx): Promise<InstanceRow | undefined>;
  /** The live instances on the machine, not locked. */
  listOnMachine(machineId: number, tx: Tx): Promise<InstanceRow[]>;
  /** Its state changes so far, oldest first. */
  eventsOf(id: number, tx?: Tx): Promise<InstanceEventRow[]>;
  /**
   * The control plane no longer hears from the (locked) instance's host: `unknown` (and `offline` once
   * HEARTBEAT_OFFLINE_AFTER_S passes) or `offline` at once.
   */
  markLost(tx: Tx, inst: InstanceRow, to: 'unknown' | 'offline', now: number): Promise<void>;
  /**
   * The machine's host stopped heartbeating: its instances turn unknown, then offline; stopped ones stay stopped,
   * unknown ones keep their offline timer. Takes the machine's row, then its instances' (MachinesApi.lockMachine).
   */
  hostLost(tx: Tx, machineId: number): Promise<void>;
}
