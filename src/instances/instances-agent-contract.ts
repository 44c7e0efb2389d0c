/**
 * What the agent protocol's server (src/agent-server/) needs of the instances feature, and all it imports of it: the
 * instances placed on a machine and what its desired state is built from (read), the steps its agent's reports make
 * them take (observed state), and the signal of a change (events). The root passes the running parts
 * (`InstancesAgentPort`, instances-module's `real`); the reads without state are functions here.
 */
import type { Tx } from '../platform/db/connect.js';
import type { CommandRequestT, SnapshotRequestT } from '../protocol/agent-protocol-schemas.js';
import type { EventsHub } from './instances-events.js';
import type { Lifecycle } from './instances-lifecycle.js';
import type { InstancesStore } from './instances-store.js';

export type { InstanceRow } from './instances-store.js';
export type { StatePatch } from './instances-lifecycle.js';
/** Whether the machine should run the instance's container; whether a stop waits for its host's word. */
export { stopPending, wantsRunning } from './instances-lifecycle.js';
/** The container ports each runtype opens (a desired instance's `ports`). */
export { RUNTYPE_PORTS, type Runtype } from './instances-request.js';
export { bootCounts, instanceFingerprintParts, instanceWorkOn, sshKeysOf, type FingerprintPart } from './instances-agent-store.js';

/** The instances feature's `execute` and `take snapshot` requests for agents (instances-commands.ts `agent`). */
export interface InstanceCommandsPort {
  openCommands(machineId: number, tx?: Tx): Promise<CommandRequestT[]>;
  openSnapshots(machineId: number, tx?: Tx): Promise<SnapshotRequestT[]>;
  answerCommand(machineId: number, requestId: string, a: { output: string; error?: string }): Promise<void>;
  answerSnapshot(machineId: number, requestId: string, a: { error?: string }): Promise<void>;
}

/** The instances on machines, read (and locked) in the caller's transaction. */
export type InstancesOnMachines = Pick<InstancesStore, 'listOnMachine' | 'listOnMachines' | 'lock' | 'lockMany'>;

/** The steps a report makes instances take: one at a time (`halt`: leaving running), many at once, and their meters. */
export type ObservedTransitions = Pick<Lifecycle, 'halt' | 'transitionMany' | 'startGpuMeters'>;

/** Changes of instances in this process (a notify wakes the waiters), and shutdown. */
export type InstanceChanges = Pick<EventsHub, 'closed' | 'next'>;

/** The running parts of the instances feature the agent server is given (instances-module's `real`). */
export interface InstancesAgentPort {
  store: InstancesOnMachines;
  lifecycle: ObservedTransitions;
  /** Wakes whoever waits on a change of instances (held long-polls, event streams, waits). */
  notify: () => void;
  commands: InstanceCommandsPort;
}
