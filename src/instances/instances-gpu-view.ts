/**
 * An instance's own GPUs as its machine's agent last sampled them (issue 33), in the client's field names and units
 * (vast-cli's Instance: `gpu_util` percent, `gpu_temp` °C, `vmem_usage` GB, `gpu_mem_bw` GB/s as in offers), and
 * the GPU fault its renter sees in `status_msg`.
 */
import type { GpuTelemetryT } from '../protocol/agent-protocol-schemas.js';
import type { InstanceRow } from './instances-store.js';

/** What the agent server keeps of a machine's GPUs (agent-server-service.ts `gpuStates`). */
export interface InstanceGpuState {
  telemetry: GpuTelemetryT | null;
  fault: string | null;
}

/** Per-machine GPU state of these machines (agent machines only), read once for a list of instances. */
export type GpuStatesPort = (machineIds: readonly number[]) => Promise<Map<number, InstanceGpuState>>;

const round = (v: number, places: number) => Math.round(v * 10 ** places) / 10 ** places;

export interface InstanceGpuFields {
  gpu_util: number | null;
  gpu_temp: number | null;
  vmem_usage: number | null;
  /** Why the instance's GPUs cannot be used, or null. */
  fault: string | null;
}

/**
 * `gpu_util`: the mean utilization of the instance's GPUs; `gpu_temp`: the hottest; `vmem_usage`: their memory in
 * use, GB (MiB / 1024, as `gpu_ram` counts). Null where no sample says (a machine without an agent: `gpu_util` 0
 * while running, as before). The fault: NVML failing takes every GPU; a GPU's own fault only its renter's.
 */
export function instanceGpuFields(inst: InstanceRow, running: boolean, gpu: InstanceGpuState | null): InstanceGpuFields {
  const t = gpu?.telemetry ?? null;
  if (!t) return { gpu_util: running ? 0 : null, gpu_temp: null, vmem_usage: null, fault: null };
  const mine = new Set(JSON.parse(inst.gpu_indexes) as number[]);
  const gpus = t.gpus.filter((g) => mine.has(g.index));
  const nums = (f: (g: (typeof gpus)[number]) => number | null) => gpus.map(f).filter((v): v is number => v !== null);
  const util = nums((g) => g.util);
  const temp = nums((g) => g.temp);
  const mem = nums((g) => g.mem_used);
  const faults = t.nvml_error !== null ? [`NVML failed: ${t.nvml_error}`] : gpus.filter((g) => g.fault !== null).map((g) => g.fault!);
  return {
    gpu_util: running ? (util.length ? round(util.reduce((a, b) => a + b, 0) / util.length, 1) : 0) : null,
    gpu_temp: running && temp.length ? Math.max(...temp) : null,
    vmem_usage: running && mem.length ? round(mem.reduce((a, b) => a + b, 0) / 1024, 2) : null,
    fault: faults.length && inst.destroyed_at === null ? `GPU fault on the host: ${faults.join('; ')}` : null,
  };
}

/** The status message with the GPU fault first (what stops the renter's work), then what it said. */
export const withGpuFault = (msg: string | null, fault: string | null) => (fault === null ? msg : msg ? `${fault}; ${msg}` : fault);
