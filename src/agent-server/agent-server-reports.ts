/**
 * A status report's full path (`PUT /api/v0/agent/status/` of a machine that is busy, offline, or says something):
 * the heartbeat recorded, the report's observed containers applied to the machine's instances
 * (agent-server-observed.ts), its hardware to the fleet's machine, and an offline machine back online, in one
 * transaction.
 */
import type { Static } from 'typebox';
import type { Config } from '../config.js';
import type { Clock } from '../platform/clock.js';
import type { Db, Tx } from '../platform/db/connect.js';
import { ApiError } from '../platform/errors.js';
import type { AgentHardwareT, StatusBody } from '../protocol/agent-protocol-schemas.js';
import type { MachinesService } from '../machines/machines-service.js';
import type { InstancesAgentPort } from '../instances/instances-agent-contract.js';
import type { AgentMachineRow, AgentStore } from './agent-server-store.js';
import type { DesiredRead } from './agent-server-desired-reads.js';
import { applyObserved } from './agent-server-observed.js';
import { hardwarePatch, networkPatch } from './agent-server-hardware.js';
import { checkHardware, checkObservedPorts } from './agent-server-checks.js';
import type { GpuHealth, GpuHealthChange } from './agent-server-health.js';
import type { AgentHealthStore } from './agent-server-health-store.js';

type StatusRequest = Static<typeof StatusBody>;

export interface ReportsDeps {
  db: Db;
  clock: Clock;
  config: Pick<Config, 'agentOfflineAfter'>;
  fleet: MachinesService;
  agents: AgentStore;
  instances: Pick<InstancesAgentPort, 'store' | 'lifecycle'>;
  heartbeatInterval: number;
  desiredOf: (machineId: number, tx: Tx) => Promise<DesiredRead>;
  /** The liveness sweep runs (agent-server-liveness.ts): a machine back online can go silent again. */
  ensureSweep: (tx: Tx, dueAt: number) => Promise<void>;
  /** Instances changed. */
  notify: () => void;
  /** Issue 33: GPU health of the machine's samples, and its down periods (reliability2). */
  gpuHealth: GpuHealth;
  health: AgentHealthStore;
  /** Told after the transaction commits when a machine's GPU health changed (the host's audit log). */
  onGpuHealthChange?: (c: GpuHealthChange) => void;
}

export function statusReports({ db, clock, config, fleet, agents, instances, heartbeatInterval, desiredOf, ensureSweep, notify, gpuHealth, health, onGpuHealthChange }: ReportsDeps) {
  /**
   * Applies an agent's report on the machine to its instances, inside `tx`. `current` is the desired state as read in
   * `tx`, when the caller has it; its `rows` are the instances the report may move. Returns how many changed, and the
   * desired state's version.
   */
  async function applyReport(
    tx: Tx,
    machineId: number,
    report: Pick<StatusRequest, 'desired_version' | 'observed'>,
    now: number,
    current?: DesiredRead,
  ): Promise<{ n: number; version: number }> {
    current ??= await desiredOf(machineId, tx);
    const boots = new Map(current.state.instances.map((i) => [i.instance_id, i.boot]));
    // The caller holds the machine's row (MachinesApi.lockMachine) when the machine has instances: every writer takes it
    // before the instances (PostgreSQL lock order).
    const n = await applyObserved(instances, tx, current.rows, report.observed, boots, report.desired_version === current.state.version, now);
    return { n, version: current.state.version };
  }

  /**
   * A report's hardware, or one held back before, applied to the fleet's machine in the report's transaction (the
   * caller holds the machine's row). What renters chose and pay for (the GPU model, its memory, the CPU, the disk,
   * the driver) does not change under them (issue 29 item 20: a report renamed a rented machine "H100 SXM"): while
   * instances are on the machine only where it is reached changes at once (its address and port range, which renters
   * need as they are to connect), and the description is held (`hardware_pending`, said in the reply) until the
   * machine is free, when the next report applies it. Returns whether a description is held.
   */
  async function applyHardware(tx: Tx, row: AgentMachineRow, reported: AgentHardwareT | undefined, occupied: boolean): Promise<boolean> {
    const wasHeld = row.hardware_pending === 1;
    if (!reported && (!wasHeld || occupied)) return wasHeld;
    const hw = reported ?? (JSON.parse(row.hardware) as AgentHardwareT);
    await fleet.updateAgentMachine(tx, row.machine_id, occupied ? networkPatch(hw) : hardwarePatch(hw));
    if (occupied !== wasHeld) await agents.update(row.machine_id, { hardware_pending: occupied ? 1 : 0 }, tx);
    return occupied;
  }

  return {
    /** `PUT /api/v0/agent/status/`: heartbeat, observed state, hardware. */
    async status(machineId: number, body: StatusRequest): Promise<{ success: true; desired_version: number; heartbeat_interval: number; hardware_pending?: true }> {
      if (body.hardware) checkHardware(body.hardware);
      const changed = await db.transaction().execute(async (tx) => {
        const now = clock.now();
        const row = await agents.byMachine(machineId, tx);
        if (!row) throw new ApiError('auth_error', 'invalid or revoked machine key');
        const patch: Parameters<typeof agents.update>[1] = { last_report_at: now, agent_version: body.agent_version, offline: 0 };
        if (body.hardware) {
          patch.hardware = JSON.stringify(body.hardware);
          patch.hardware_declared = body.hardware.hardware_declared ? 1 : 0;
        }
        if (body.gpu_telemetry) {
          patch.gpu_telemetry = JSON.stringify(body.gpu_telemetry);
          patch.gpu_telemetry_at = now;
        }
        await agents.update(machineId, patch, tx);
        if (row.offline === 1) await ensureSweep(tx, now + config.agentOfflineAfter);
        const current = await desiredOf(machineId, tx);
        // Lock order of every writer (PostgreSQL): the agent row, the machine's row (MachinesApi.lockMachine: before any
        // instance, as a destroy, a stop or a rental there takes it, and only when this report locks an instance or
        // writes the machine), the instances, then the rest of the fleet.
        const pendingNow = row.hardware_pending === 1 && current.rows.length === 0;
        const healthChanges = gpuHealth.changes(row, body.gpu_telemetry);
        if (current.rows.length || body.hardware || pendingNow || row.offline === 1 || healthChanges) await fleet.lockMachine(tx, machineId);
        // Renters are shown these ports (and the serverless router signs URLs with them): only the machine's own range.
        if (body.observed.some((o) => Object.keys(o.ports).length)) {
          const machine = current.machine ?? (await fleet.machine(machineId, tx));
          if (machine) checkObservedPorts(body.observed, machine);
        }
        const applied = await applyReport(tx, machineId, body, now, current);
        let n = applied.n;
        const held = await applyHardware(tx, row, body.hardware, current.rows.length > 0);
        if (row.offline === 1) {
          const machine = await fleet.machine(machineId, tx);
          if (machine?.fault === 'offline') await fleet.setMachineFault(tx, machineId, null);
          // Issue 33: the silence ends; reliability2 counts it.
          await health.close(machineId, 'offline', now, tx);
          await gpuHealth.updateReliability(tx, machineId, row.created_at, now);
          n++;
        }
        const gpuChange = healthChanges ? await gpuHealth.apply(tx, row, body.gpu_telemetry!, now) : null;
        // Renters of the machine see the fault (or its end) in their instances' status_msg: wake their streams.
        if (gpuChange) n++;
        // Applying a report changes actual states only, never what the desired state is built from: its version holds.
        return { n, version: applied.version, held, gpuChange };
      });
      if (changed.n) notify();
      if (changed.gpuChange) onGpuHealthChange?.(changed.gpuChange);
      return { success: true, desired_version: changed.version, heartbeat_interval: heartbeatInterval, ...(changed.held ? { hardware_pending: true as const } : {}) };
    },
  };
}
