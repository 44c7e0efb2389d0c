/**
 * What a real host's report means for its instances (docs/AGENT-PROTOCOL.md §3): the agent's observed containers
 * become each instance's `actual_status`, ports and status message. Level-triggered: the whole report is applied
 * each time, and a state is written only when it differs. A report about an older `generation` or `boot` than the
 * desired one is stale (the agent has not acted on the change yet) and changes nothing.
 */
import type { ObservedInstanceT } from '../protocol/agent-protocol-schemas.js';
import type { Tx } from '../platform/db/connect.js';
import {
  stopPending, type InstanceRow, type InstancesOnMachines, type ObservedTransitions, type StatePatch,
} from '../instances/instances-agent-contract.js';
import { wantsRunning } from './agent-server-desired.js';
import { pullProgressText } from '../protocol/pull-progress.js';

export interface ObservedDeps {
  store: InstancesOnMachines;
  lifecycle: ObservedTransitions;
}

export const MISSING_MSG = 'its container is gone from the host; the host is making it again';
export const OFFLINE_MSG = 'host offline: its agent stopped reporting';
/** A running Jupyter instance whose image has no Jupyter (the agent's `jupyter_missing`, issue 32). */
export const JUPYTER_MISSING_MSG = 'Jupyter is not installed in this image (no `jupyter` on PATH); SSH and onstart run';

const samePorts = (a: string | null, b: Record<string, unknown>) => a !== null && a === JSON.stringify(b);

/** What a report changes of one instance: a step (`transition`), or leaving running (`halt`, its GPUs kept). */
type Change = { inst: InstanceRow; patch: StatePatch; halt: boolean; startsMeter: boolean };

/** A machine's report, with the instances it may move (`rows`: as read in the transaction; `locked`: read locked). */
export interface MachineReport {
  rows: InstanceRow[];
  observed: ObservedInstanceT[];
  boots: Map<number, number>;
  /** The agent acted on the current desired state: an instance it says nothing about has no container. */
  converged: boolean;
  locked?: boolean;
}

/**
 * Applies one report to the instances on the machine (`rows`, as read in `tx`), inside `tx`. `converged`: the agent acted on the current
 * desired state, so an instance it says nothing about has no container (else it may not have made it yet).
 * Returns how many instances changed.
 */
export async function applyObserved(
  deps: ObservedDeps,
  tx: Tx,
  rows: InstanceRow[],
  observed: ObservedInstanceT[],
  boots: Map<number, number>,
  converged: boolean,
  now: number,
): Promise<number> {
  return applyReports(deps, tx, [{ rows, observed, boots, converged }], now);
}

/**
 * Applies the reports of several machines at once, set-based: the instances they may move locked in one statement
 * (id order; unless read locked), every step in one UPDATE and one event INSERT, and the compute billing of every
 * instance that reached running started together. A change that leaves running (rare: a crash, a lost container)
 * goes through `halt` one by one, first. The caller holds the machines' rows (MachinesApi.lockMachine). Returns how
 * many instances changed.
 */
export async function applyReports({ store, lifecycle }: ObservedDeps, tx: Tx, reports: readonly MachineReport[], now: number): Promise<number> {
  const moving: { row: InstanceRow; o: ObservedInstanceT | undefined; locked: boolean; pending?: true }[] = [];
  for (const r of reports) {
    const byId = new Map(r.observed.map((o) => [o.instance_id, o]));
    for (const row of r.rows) {
      if (stopPending(row)) {
        // A stop made while the host was not heard: a report of the host acting on it (converged) that shows the
        // container not running, or none, confirms it.
        const o = byId.get(row.id);
        if (r.converged && o?.state !== 'running') moving.push({ row, o, locked: r.locked === true, pending: true });
        continue;
      }
      if (!wantsRunning(row)) continue;
      const o = byId.get(row.id);
      if (o && (o.generation !== row.generation || o.boot !== (r.boots.get(row.id) ?? 0))) continue;
      if (!o && !r.converged) continue;
      moving.push({ row, o, locked: r.locked === true });
    }
  }
  const toLock = moving.filter((m) => !m.locked).map((m) => m.row.id).sort((a, b) => a - b);
  const fresh = new Map((await store.lockMany(toLock, tx)).map((i) => [i.id, i]));
  const changes: Change[] = [];
  for (const { row, o, locked, pending } of moving) {
    const inst = locked ? row : fresh.get(row.id);
    if (pending) {
      // Its compute billing and GPUs went with the stop: only the state is left to follow (unless it changed since).
      if (inst && stopPending(inst)) changes.push({ inst, patch: { actual_status: 'stopped', status_msg: null }, halt: false, startsMeter: false });
      continue;
    }
    if (!inst || !wantsRunning(inst) || (o && o.generation !== inst.generation)) continue;
    const change = changeOf(inst, o, now);
    if (change) changes.push(change);
  }
  for (const c of changes) if (c.halt) await lifecycle.halt(tx, c.inst, now, c.patch as HaltTo, true);
  const steps = changes.filter((c) => !c.halt);
  const after = await lifecycle.transitionMany(tx, steps, now);
  await lifecycle.startGpuMeters(tx, after.filter((_, i) => steps[i].startsMeter), now);
  return changes.length;
}

type HaltTo = { actual_status: string; status_msg: string | null };

/** A note of the agent's on a volume over its size (src/agent/volumes.ts `overSizeNote`). */
const VOLUME_NOTE = /^volume \d+ holds .* over its /;

/**
 * A running instance's status message after a report. Reaching running: none (the loading notes are over), unless the
 * agent has something to say: the image lacks the Jupyter its runtype starts (`jupyter_missing`, issue 32), or a note
 * (issue 33: a volume over its size on a host without quotas). While it runs, the agent's word replaces the message;
 * when the agent has nothing to say, a message it said before goes, and a note of someone else's (a copy's progress,
 * src/copy/, written while the instance runs) stays.
 */
function runningMsg(current: string | null, wasRunning: boolean, o: Pick<ObservedInstanceT, 'jupyter_missing' | 'note'>): string | null {
  const agent = o.jupyter_missing === true ? JUPYTER_MISSING_MSG : (o.note ?? null);
  if (!wasRunning || agent !== null) return agent;
  return current === null || current === JUPYTER_MISSING_MSG || VOLUME_NOTE.test(current) ? null : current;
}

/** What the report says of one instance (locked) changes, or undefined when it changes nothing. */
function changeOf(inst: InstanceRow, o: ObservedInstanceT | undefined, now: number): Change | undefined {
  const status = inst.actual_status;
  const toLoading = (msg: string | null): Change | undefined => {
    if (status === 'loading' && inst.status_msg === msg) return undefined;
    // Leaving running (or offline, exited) stops compute billing; from provisioning it is a plain step.
    const halt = !(status === null || status === 'loading');
    return { inst, patch: { actual_status: 'loading', status_msg: msg }, halt, startsMeter: false };
  };
  if (!o) return status === null || status === 'loading' ? undefined : toLoading(MISSING_MSG);
  switch (o.state) {
    case 'running': {
      const wasRunning = status === 'running';
      const msg = runningMsg(wasRunning ? inst.status_msg : null, wasRunning, o);
      if (wasRunning && samePorts(inst.ports, o.ports) && inst.status_msg === msg) return undefined;
      const patch = { actual_status: 'running', status_msg: msg, ports: JSON.stringify(o.ports), running_since: wasRunning ? inst.running_since : now };
      return { inst, patch, halt: false, startsMeter: !wasRunning };
    }
    case 'pulling':
      // How far, when the agent says (issue 33): `pulling image: 1.2 GB of 4.8 GB (25%)`.
      return toLoading(pullProgressText(o.pull));
    case 'created':
      return toLoading('starting the container');
    case 'failed':
      return toLoading(`failed: ${o.error ?? 'the host could not make the container'}; retrying`);
    case 'exited': {
      const msg = `container exited with code ${o.exit_code ?? 'unknown'}`;
      if (status === 'exited' && inst.status_msg === msg) return undefined;
      return { inst, patch: { actual_status: 'exited', status_msg: msg }, halt: true, startsMeter: false };
    }
    case 'stopped':
      // Meant to run: the agent is about to start it (a report from between two of its steps).
      return undefined;
  }
}

/** The machine went silent: its instances that should run are `offline` until it reports them up again. */
export async function markOffline({ store, lifecycle }: ObservedDeps, tx: Tx, machineId: number, now: number): Promise<number> {
  let n = 0;
  for (const row of await store.listOnMachine(machineId, tx)) {
    if (!wantsRunning(row) || row.actual_status === 'offline') continue;
    const inst = await store.lock(row.id, tx);
    if (!inst || !wantsRunning(inst) || inst.actual_status === 'offline') continue;
    await lifecycle.halt(tx, inst, now, { actual_status: 'offline', status_msg: OFFLINE_MSG }, true);
    n++;
  }
  return n;
}
