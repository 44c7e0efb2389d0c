/**
 * What a host sees of its machine's GPUs in `show machine` (issue 33): every GPU's latest sample, the fault the machine
 * stands under, and its recent health events (a GPU fault or a silence, when it began and ended).
 */
import type { Tx } from '../platform/db/connect.js';
import type { GpuSampleT } from '../protocol/agent-protocol-schemas.js';

/** A machine's GPU state as the agent server keeps it (agent-server-service.ts `gpuStates`). */
export interface HostedGpuState {
  telemetry: { nvml_error: string | null; gpus: GpuSampleT[] } | null;
  sampled_at: number | null;
  fault: string | null;
  events: { kind: string; reason: string; started_at: number; ended_at: number | null }[];
}

export type HostedGpuStatesPort = (machineIds: readonly number[], tx?: Tx) => Promise<Map<number, HostedGpuState>>;

export function machineGpuJson(state: HostedGpuState | undefined) {
  return {
    gpus: state?.telemetry?.gpus ?? [],
    gpu_sampled_at: state?.sampled_at ?? null,
    gpu_fault: state?.fault ?? null,
    health_events: state?.events ?? [],
  };
}
