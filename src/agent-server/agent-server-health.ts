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
 * It is recomputed at each change of health or liveness, and every RELIABILITY_REFRESH_S for the machines whose
 * down periods are still in the window (the window rolls: an old outage ages out, an ongoing one grows).
 */
import type { GpuTelemetryT } from '../protocol/agent-protocol-schemas.js';
import type { Tx } from '../platform/db/connect.js';
import type { KvState } from '../platform/db/kv.js';
import type { Scheduler } from '../platform/scheduler.js';
import type { MachinesService } from '../machines/machines-service.js';
import type { AgentHealthStore, HealthPeriod } from './agent-server-health-store.js';
import type { AgentMachineRow, AgentStore } from './agent-server-store.js';

export const RELIABILITY_WINDOW_S = 30 * 86_400;
export const RELIABILITY_MIN_WINDOW_S = 86_400;
export const FAULT_MIN_DOWN_S = 3_600;
/** Health events a host sees per machine in `show machine`. */
export const HEALTH_EVENTS_SHOWN = 10;
/** How often reliability2 is recomputed as the window rolls (agent-server-service.ts's job). */
export const RELIABILITY_REFRESH_S = 3600;
/** Machines one refresh job recomputes at most; the rest in the next job, due at once. */
const REFRESH_BATCH = 200;
export const JOB_RELIABILITY = 'agent.reliability';
const RELIABILITY_KV = 'agent.reliability';

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

export interface GpuHealthDeps {
  agents: AgentStore;
  health: AgentHealthStore;
  fleet: MachinesService;
  kv: KvState;
  scheduler: Scheduler;
}

export function gpuHealth({ agents, health, fleet, kv, scheduler }: GpuHealthDeps) {
  /** Starts the hourly refresh chain unless it runs (one chain across every process, held by its kv row). */
  async function ensureRefresh(tx: Tx, now: number): Promise<void> {
    const due = now + RELIABILITY_REFRESH_S;
    if (await kv.claim(tx, RELIABILITY_KV, String(due))) await scheduler.schedule(JOB_RELIABILITY, due, { after: 0 }, { tx, ref: RELIABILITY_KV });
  }

  async function updateReliability(tx: Tx, machineId: number, createdAt: number, now: number): Promise<void> {
    const window = Math.max(RELIABILITY_MIN_WINDOW_S, Math.min(RELIABILITY_WINDOW_S, now - createdAt));
    const r = reliabilityOf(await health.periodsSince(machineId, now - window - FAULT_MIN_DOWN_S, tx), createdAt, now);
    await fleet.setAgentReliability(tx, machineId, r);
    if (r < 1) await ensureRefresh(tx, now);
  }

  // One refresh: the machines whose periods may still be in the window, a batch at a time; then the next in an hour,
  // or none when no machine has a period left in its window (the next fault or silence starts the chain again).
  scheduler.register(JOB_RELIABILITY, async (payload: { after?: number }, { tx, now }: { tx: Tx; now: number }) => {
    const after = payload?.after ?? 0;
    // Two refreshes' margin: a period leaving the window is seen once more after it left, and its machine set to 1.
    const due = await health.machinesWithPeriodsSince(now - RELIABILITY_WINDOW_S - FAULT_MIN_DOWN_S - 2 * RELIABILITY_REFRESH_S, after, REFRESH_BATCH, tx);
    for (const m of due) {
      await fleet.lockMachine(tx, m.machine_id);
      const window = Math.max(RELIABILITY_MIN_WINDOW_S, Math.min(RELIABILITY_WINDOW_S, now - m.created_at));
      await fleet.setAgentReliability(tx, m.machine_id, reliabilityOf(await health.periodsSince(m.machine_id, now - window - FAULT_MIN_DOWN_S, tx), m.created_at, now));
    }
    if (due.length === REFRESH_BATCH) {
      await scheduler.schedule(JOB_RELIABILITY, now, { after: due[due.length - 1].machine_id }, { tx, ref: RELIABILITY_KV });
    } else if (after === 0 && due.length === 0) {
      await kv.remove(tx, RELIABILITY_KV);
    } else {
      await kv.set(tx, RELIABILITY_KV, String(now + RELIABILITY_REFRESH_S));
      await scheduler.schedule(JOB_RELIABILITY, now + RELIABILITY_REFRESH_S, { after: 0 }, { tx, ref: RELIABILITY_KV });
    }
  });

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
