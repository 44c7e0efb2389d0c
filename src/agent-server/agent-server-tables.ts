import type { Generated } from 'kysely';

/**
 * Machines run by `gpuplane agent` (docs/AGENT-PROTOCOL.md). The fleet row (fleet_machines) is the machine as the
 * marketplace sees it; this row is its agent: the machine credential (hash only), the registration id that makes a
 * retried registration idempotent, and the last report. Times Unix seconds; booleans 0/1.
 */
export interface AgentMachinesTable {
  /** The fleet machine id. */
  machine_id: number;
  /** The host's user (a host is a user). */
  user_id: number;
  /** Chosen by the agent: a repeated registration of the same user answers the same machine. */
  registration_id: string;
  /** SHA-256 of the machine key, hex; null once revoked. The key itself is never stored. */
  key_hash: string | null;
  agent_version: string;
  hardware_declared: number;
  /** JSON: the hardware the agent last reported (AgentHardware). */
  hardware: string;
  /**
   * 1 while `hardware` arrived with instances on the machine and waits to describe it until the machine is free
   * (agent-server-reports.ts `status`); 0 once it describes it. Migration 0048.
   */
  hardware_pending: number;
  /** The last status report, or null before the first. */
  last_report_at: number | null;
  /** 1 while the machine is marked offline for silence (its instances `offline`). */
  offline: number;
  created_at: number;
  /** JSON: the latest GPU sample its heartbeats brought (GpuTelemetry), or null before one. Migration 0050. */
  gpu_telemetry: string | null;
  /** When `gpu_telemetry` arrived. */
  gpu_telemetry_at: number | null;
  /** The GPU fault the machine stands under (agent-server-health.ts), or null when its GPUs are healthy. */
  gpu_fault: string | null;
}

/**
 * Periods a machine was down, for reliability2 (agent-server-health.ts): `offline` (its agent silent past the liveness
 * timeout) or `gpu` (a GPU lost, NVML failing, a critical Xid). `ended_at` null while it lasts. Migration 0050.
 */
export interface AgentHealthPeriodsTable {
  id: Generated<number>;
  machine_id: number;
  kind: 'offline' | 'gpu';
  reason: string;
  started_at: number;
  ended_at: number | null;
}

/**
 * A renter's `request_logs` on an agent-run instance: listed in the machine's desired state until the agent answers
 * (`answered_at`) or it expires. `log_request_id` is the instances feature's log request (its `result_url`).
 */
export interface AgentLogRequestsTable {
  request_id: string;
  machine_id: number;
  instance_id: number;
  log_request_id: number;
  tail: number | null;
  filter: string | null;
  text: string | null;
  error: string | null;
  answered_at: number | null;
  expires_at: number;
}

export interface AgentTables {
  agent_machines: AgentMachinesTable;
  agent_health_periods: AgentHealthPeriodsTable;
  agent_log_requests: AgentLogRequestsTable;
}
