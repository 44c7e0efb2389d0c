/**
 * What a real host's report means for its instances (docs/AGENT-PROTOCOL.md §3): the agent's observed containers
 * become each instance's `actual_status`, ports and status message. Level-triggered: the whole report is applied
 * each time, and a state is written only when it differs. A report about an older `generation` or `boot` than the
 * desired one is stale (the agent has not acted on the change yet) and changes nothing.
 */
import type { ObservedInstanceT } from '../fleet/agent-protocol-schemas.js';
import type { Tx } from '../platform/db/connect.js';
import type { Lifecycle } from '../instances/instances-lifecycle.js';
import type { InstanceRow, InstancesStore } from '../instances/instances-store.js';
import { wantsRunning } from './agent-desired.js';

export interface ObservedDeps {
  store: InstancesStore;
  lifecycle: Lifecycle;
}

export const MISSING_MSG = 'its container is gone from the host; the host is making it again';
export const OFFLINE_MSG = 'host offline: its agent stopped reporting';

const samePorts = (a: string | null, b: Record<string, unknown>) => a !== null && a === JSON.stringify(b);

/**
 * Applies one report to the instances on the machine (`rows`, as read in `tx`), inside `tx`. `converged`: the agent acted on the current
 * desired state, so an instance it says nothing about has no container (else it may not have made it yet).
 * Returns how many instances changed.
 */
export async function applyObserved(
  { store, lifecycle }: ObservedDeps,
  tx: Tx,
  rows: InstanceRow[],
  observed: ObservedInstanceT[],
  boots: Map<number, number>,
  converged: boolean,
  now: number,
): Promise<number> {
  const byId = new Map(observed.map((o) => [o.instance_id, o]));
  let changed = 0;
  for (const row of rows) {
    if (!wantsRunning(row)) continue;
    const o = byId.get(row.id);
    if (o && (o.generation !== row.generation || o.boot !== (boots.get(row.id) ?? 0))) continue;
    if (!o && !converged) continue;
    const inst = await store.lock(row.id, tx);
    if (!inst || !wantsRunning(inst) || (o && o.generation !== inst.generation)) continue;
    if (await applyOne({ store, lifecycle }, tx, inst, o, now)) changed++;
  }
  return changed;
}

async function applyOne({ lifecycle }: ObservedDeps, tx: Tx, inst: InstanceRow, o: ObservedInstanceT | undefined, now: number): Promise<boolean> {
  const status = inst.actual_status;
  const toLoading = async (msg: string | null) => {
    if (status === 'loading' && inst.status_msg === msg) return false;
    // Leaving running (or offline, exited) stops compute billing; from provisioning it is a plain step.
    if (status === null || status === 'loading') await lifecycle.transition(tx, inst, { actual_status: 'loading', status_msg: msg }, now);
    else await lifecycle.halt(tx, inst, now, { actual_status: 'loading', status_msg: msg }, true);
    return true;
  };
  if (!o) return status === null || status === 'loading' ? false : toLoading(MISSING_MSG);
  switch (o.state) {
    case 'running': {
      if (status === 'running' && samePorts(inst.ports, o.ports)) return false;
      const wasRunning = status === 'running';
      const next = await lifecycle.transition(
        tx,
        inst,
        { actual_status: 'running', status_msg: null, ports: JSON.stringify(o.ports), running_since: wasRunning ? inst.running_since : now },
        now,
      );
      if (!wasRunning) await lifecycle.startGpuMeter(tx, next, now);
      return true;
    }
    case 'pulling':
      return toLoading('pulling the image');
    case 'created':
      return toLoading('starting the container');
    case 'failed':
      return toLoading(`failed: ${o.error ?? 'the host could not make the container'}; retrying`);
    case 'exited': {
      const msg = `container exited with code ${o.exit_code ?? 'unknown'}`;
      if (status === 'exited' && inst.status_msg === msg) return false;
      await lifecycle.halt(tx, inst, now, { actual_status: 'exited', status_msg: msg }, true);
      return true;
    }
    case 'stopped':
      // Meant to run: the agent is about to start it (a report from between two of its steps).
      return false;
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
