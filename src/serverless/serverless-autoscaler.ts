/**
 * The simulated autoscaler's rule, a pure function. Each worker is taken to serve SIM_WORKER_PERF load units per
 * second. The load (never less than `min_load`) needs `hot` workers busy at `target_util`; `cold_mult` times the
 * load is the capacity kept ready for a burst. The workergroup keeps the larger of the two, never fewer than
 * `cold_workers` and never more than `max_workers`.
 */

/** Load units per second one simulated worker serves. */
export const SIM_WORKER_PERF = 100;
/** How often each workergroup's autoscaler decides (service time). */
export const AUTOSCALE_PERIOD_S = 20;

export interface ScalingSettings {
  min_load: number;
  target_util: number;
  cold_mult: number;
  cold_workers: number;
  max_workers: number;
}

export interface Decision {
  target: number;
  reason: string;
}

export function decide(load: number, s: ScalingSettings): Decision {
  const demand = Math.max(load, s.min_load);
  const hot = Math.ceil(demand / (s.target_util * SIM_WORKER_PERF));
  const ready = Math.ceil((demand * s.cold_mult) / SIM_WORKER_PERF);
  let target = Math.max(hot, ready);
  const parts = [
    `load ${load}${load < s.min_load ? ` (below min_load ${s.min_load})` : ''} needs ${hot} worker(s) at target_util ${s.target_util}`,
    `cold_mult ${s.cold_mult} keeps capacity for ${ready}`,
  ];
  if (target < s.cold_workers) {
    target = s.cold_workers;
    parts.push(`raised to cold_workers ${s.cold_workers}`);
  }
  if (target > s.max_workers) {
    target = s.max_workers;
    parts.push(`capped at max_workers ${s.max_workers}`);
  }
  return { target, reason: parts.join('; ') };
}
