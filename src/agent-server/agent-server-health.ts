/**
 * GPU health of agent machines (issue 33): what a heartbeat's GPU sample means for the machine, and reliability2.
 *
 * A sample with a fault (a GPU lost, NVML failing, a critical Xid: src/agent/gpu-telemetry.ts) puts the machine under
 * the fleet fault `gpu`: it is not offered, its renters see why in `status_msg` (instances-view.ts), its host gets an
 * audit entry and a health event in `show machine`. The first healthy sample after it lifts it all.
 *
 * reliability2 is measured, over the last RELIABILITY_WINDOW_S (30 days, or the machine's age when younger, but at
 * least RELIABILITY_MIN_WINDOW_S): the share of that window the machine was up, where down is the union of the periods
 * its agent was silent past the liveness timeout and the periods it stood under a GPU fault, plus, for each GPU fault
 * shorter than FAULT_MIN_DOWN_S (an hour), the rest of that hour (a GPU that falls off the bus and comes back at once
 * still cost its renters their job):
 *   reliability2 = 1 - (|offline ∪ gpu-fault periods| + Σ max(0, 1 h - fault length)) / window.
 * It is recomputed at each change of health or liveness.
 */
import type { GpuTelemetryT } from '../protocol/agent-protocol-schemas.js';
import type { Tx } from '../platform/db/connect.js';
import type { MachinesService } from '../machines/machines-service.js';
import type { AgentHealthStore, HealthPeriod } from './agent-server-health-store.js';
import type { AgentMachineRow, AgentStore } from './agent-server-store.js';

export const RELIABILITY_WINDOW_S = 30 * 86_400;
export const RELIABILITY_MIN_WINDOW_S = 86_400;
export const FAULT_MIN_DOWN_S = 3_600;
/** Health events a host sees per machine in `show machine`. */
export const HEALTH_EVENTS_SHOWN = 10;

/** The machine's fault in one line, or null when every GPU is healthy. */
export function faultOf(t: GpuTelemetryT): string | null {
  if (t.nvml_error !== null) return `NVML failed: ${t.nvml_error}`.slice(0, 500);
  const bad = t.gpus.filter((g) => g.fault !== null);
  if (bad.length === 0) return null;
  return bad.map((g) => (g.fault!.startsWith(`GPU ${g.index} `) ? g.fault! : `GPU ${g.index}: ${g.fault}`)).join('; ').slice(0, 500);
}

/** reliability2 from the machine's down periods (see the file's comment), four decimals. */
export function reliabilityOf(periods: readonly HealthPeriod[], createdAt: number, now: number): number {
  const window = Math.max(RELIABILITY_MIN_WINDOW_S, Math.min(RELIABILITY_WINDOW_S, now - createdAt));
  const from = now - window;
  // A GPU fault shorter than FAULT_MIN_DOWN_S adds the rest of that hour on top of the time measured.
  const shortFaults = periods
    .filter((p) => p.kind === 'gpu' && p.started_at >= from)
    .reduce((sum, p) => sum + Math.max(0, FAULT_MIN_DOWN_S - ((p.ended_at ?? now) - p.started_at)), 0);
  const spans = periods
    .map((p) => [Math.max(from, p.started_at), Math.min(now, p.ended_at ?? now)] as const)
    .filter(([a, b]) => b > a)
    .sort((x, y) => x[0] - y[0]);
  let down = 0;
  let curA = -Infinity;
  let curB = -Infinity;
  for (const [a, b] of spans) {
    if (a > curB) {
      if (curB > curA) down += curB - curA;
      curA = a;
      curB = b;
    } else curB = Math.max(curB, b);
  }
  if (curB > curA) down += curB - curA;
  return Math.round(Math.max(0, Math.min(1, 1 - (down + shortFaults) / window)) * 10_000) / 10_000;
}

/** A change of a machine's GPU health, for its host's audit log (after the change commits). */
export interface GpuHealthChange {
  machineId: number;
  userId: number;
  fault: string | null;
  before: string | null;
}

export function gpuHealth({ agents, health, fleet }: { agents: AgentStore; health: AgentHealthStore; fleet: MachinesService }) {
  async function updateReliability(tx: Tx, machineId: number, createdAt: number, now: number): Promise<void> {
    const window = Math.max(RELIABILITY_MIN_WINDOW_S, Math.min(RELIABILITY_WINDOW_S, now - createdAt));
    const r = reliabilityOf(await health.periodsSince(machineId, now - window - FAULT_MIN_DOWN_S, tx), createdAt, now);
    await fleet.setAgentReliability(tx, machineId, r);
  }

  return {
    updateReliability,

    /**
     * The report's sample applied, inside the report's transaction, after the caller locked the machine's row when
     * `changes` said so. Returns the change, or null when the machine's health stays as it was.
     */
    async apply(tx: Tx, row: AgentMachineRow, t: GpuTelemetryT, now: number): Promise<GpuHealthChange | null> {
      const fault = faultOf(t);
      if (fault === row.gpu_fault) return null;
      const id = row.machine_id;
      const machine = await fleet.machine(id, tx);
      if (row.gpu_fault === null) {
        await health.open(id, 'gpu', fault!, now, tx);
        if (machine && (machine.fault === null || machine.fault === 'offline')) await fleet.setMachineFault(tx, id, 'gpu');
      } else if (fault === null) {
        await health.close(id, 'gpu', now, tx);
        if (machine?.fault === 'gpu') await fleet.setMachineFault(tx, id, null);
      }
      await agents.update(id, { gpu_fault: fault }, tx);
      if (row.gpu_fault === null || fault === null) await updateReliability(tx, id, row.created_at, now);
      return { machineId: id, userId: row.user_id, fault, before: row.gpu_fault };
    },

    /** Whether applying this sample changes the machine's health (the caller then locks the machine's row first). */
    changes: (row: AgentMachineRow, t: GpuTelemetryT | undefined) => t !== undefined && faultOf(t) !== row.gpu_fault,
  };
}

export type GpuHealth = ReturnType<typeof gpuHealth>;
