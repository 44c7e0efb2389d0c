/**
 * The liveness timeout (docs/AGENT-PROTOCOL.md): a machine whose agent is silent for `agentOfflineAfter` goes offline
 * with its running instances. One chain of sweep jobs across every process, each due when the next machine can go
 * silent, so a heartbeat is one row update with no timer to move.
 */
import type { Config } from '../config.js';
import type { Tx } from '../platform/db/connect.js';
import type { KvState } from '../platform/db/kv.js';
import type { Scheduler } from '../platform/scheduler.js';
import type { MachinesService } from '../machines/machines-service.js';
import type { InstancesAgentPort } from '../instances/instances-agent-contract.js';
import type { AgentStore } from './agent-server-store.js';
import { markOffline } from './agent-server-observed.js';
import type { AgentHealthStore } from './agent-server-health-store.js';
import type { GpuHealth } from './agent-server-health.js';

/** The liveness sweep: one chain of jobs across every process, each due when the next machine can go silent. */
export const JOB_AGENT_SWEEP = 'agent.sweep';
/**
 * Per-machine timers of the versions before the sweep chain. Nothing schedules them now, but a database made then can
 * still hold some, and there they are what starts the chain (a heartbeat does not; registration and an offline
 * machine's report do): so a left-over one makes sure the sweep runs, where a kind without a handler would be dropped.
 */
const JOB_AGENT_OFFLINE_LEGACY = 'agent.offline';
/** kv row held while the sweep chain runs (the chain's lock, as the simulated fleet's heartbeat chain has one). */
const SWEEP_KV = 'agent.sweep';
/** Machines one sweep job takes offline at most. */
const SWEEP_BATCH = 50;

export interface LivenessDeps {
  agents: AgentStore;
  kv: KvState;
  scheduler: Scheduler;
  config: Pick<Config, 'agentOfflineAfter'>;
  fleet: MachinesService;
  instances: Pick<InstancesAgentPort, 'store' | 'lifecycle'>;
  /** Instances changed (a sweep took some offline). */
  notify: () => void;
  /** Issue 33: the down periods and reliability2 (agent-server-health.ts). */
  health: AgentHealthStore;
  gpuHealth: Pick<GpuHealth, 'updateReliability'>;
}

/** Registers the sweep's jobs with the scheduler; returns how a report or a registration makes sure it runs. */
export function liveness({ agents, kv, scheduler, config, fleet, instances, notify, health, gpuHealth }: LivenessDeps) {
  /**
   * Starts the liveness sweep unless it runs. A running chain is due no later than `dueAt`: it is due when the machine
   * that reported longest ago can go silent, and a machine that reports now can go silent only later.
   */
  async function ensureSweep(tx: Tx, dueAt: number): Promise<void> {
    if (await kv.claim(tx, SWEEP_KV, String(dueAt))) await scheduler.schedule(JOB_AGENT_SWEEP, dueAt, {}, { tx, ref: SWEEP_KV });
  }

  /**
   * One sweep: every machine silent for the liveness timeout goes offline with its running instances; the next sweep
   * is due when the next one can. A heartbeat is then one row update, with no timer to move.
   */
  async function sweep(_payload: unknown, { tx, now }: { tx: Tx; now: number }): Promise<void> {
    const timeout = config.agentOfflineAfter;
    const silent = await agents.silentSince(now - timeout, SWEEP_BATCH, tx);
    for (const machineId of silent) {
      await agents.update(machineId, { offline: 1 }, tx);
      // Lock order of every writer (PostgreSQL): the machine's agent row, the machine's row (MachinesApi.lockMachine:
      // before any instance, as a destroy or a rental there takes it), its instances, then the rest of the fleet.
      await fleet.lockMachine(tx, machineId);
      await markOffline(instances, tx, machineId, now);
      const machine = await fleet.machine(machineId, tx);
      if (machine && machine.fault === null) await fleet.setMachineFault(tx, machineId, 'offline');
      // Issue 33: reliability2 counts the silence from the last report (agent-server-health.ts).
      await health.open(machineId, 'offline', 'agent silent', now - timeout, tx);
      const row = await agents.byMachine(machineId, tx);
      if (row) await gpuHealth.updateReliability(tx, machineId, row.created_at, now);
    }
    let next = now;
    // A full batch (a whole rack went silent): the rest in the next job, due now, so no transaction holds many
    // machines' rows for long.
    if (silent.length < SWEEP_BATCH) {
      const oldest = await agents.oldestOnlineReport(tx);
      if (oldest === null) {
        await kv.remove(tx, SWEEP_KV);
        return;
      }
      next = Math.max(oldest + timeout, now + 1);
    }
    await kv.set(tx, SWEEP_KV, String(next));
    await scheduler.schedule(JOB_AGENT_SWEEP, next, {}, { tx, ref: SWEEP_KV });
  }

  scheduler.register(JOB_AGENT_SWEEP, sweep);
  scheduler.register(JOB_AGENT_OFFLINE_LEGACY, (_p, { tx, now }) => ensureSweep(tx, now));
  scheduler.afterJob.push((kind) => {
    if (kind === JOB_AGENT_SWEEP) notify();
  });

  return { ensureSweep };
}

export type Liveness = ReturnType<typeof liveness>;
