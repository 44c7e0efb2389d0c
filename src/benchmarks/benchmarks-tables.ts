import type { Generated } from 'kysely';

/**
 * Benchmark results gpuplane records (`search benchmarks`, `run benchmarks`' cached results): one measured value of
 * a machine's GPUs running an image or template. Times are Unix seconds (double precision), as everywhere.
 */
export interface BenchmarksTable {
  id: Generated<number>;
  machine_id: number;
  gpu_name: string;
  num_gpus: number;
  /** The result, in the unit of its `type` (e.g. `perf`: the template's own measure). */
  value: number;
  type: string;
  template_hash: string | null;
  template_id: number | null;
  /** The instance that ran it, if one did. */
  contract_id: number | null;
  image: string | null;
  launch_args: string | null;
  last_update: number;
}

export interface BenchmarksTables {
  benchmarks: BenchmarksTable;
}
