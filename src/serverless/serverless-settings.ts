/** The autoscaling settings of endpoints and workergroups, and their checks (spec: Create serverless endpoint). */
import { badRequest } from '../platform/errors.js';

/** Most workers one workergroup may keep. */
export const MAX_WORKERS_LIMIT = 100;

export type Settings = Partial<Record<'min_load' | 'min_cold_load' | 'target_util' | 'cold_mult' | 'cold_workers' | 'max_workers' | 'max_queue_time' | 'target_queue_time' | 'inactivity_timeout', number | null>>;
const given = <T>(v: T | null | undefined): v is T => v !== null && v !== undefined;

/** Checks the settings a body gives (nulls are "not given"), against each other as they will stand. */
export function checkSettings(s: Settings, merged: { cold_workers: number; max_workers: number }): void {
  if (given(s.target_util) && !(s.target_util > 0 && s.target_util <= 1)) throw badRequest('target_util must be more than 0 and at most 1');
  if (given(s.cold_mult) && !(s.cold_mult >= 0)) throw badRequest('cold_mult must not be negative');
  if (given(s.min_load) && !(s.min_load >= 0)) throw badRequest('min_load must not be negative');
  if (merged.max_workers < 1 || merged.max_workers > MAX_WORKERS_LIMIT) throw badRequest(`max_workers must be from 1 to ${MAX_WORKERS_LIMIT}`);
  if (merged.cold_workers < 0 || merged.cold_workers > merged.max_workers) throw badRequest('cold_workers must be from 0 to max_workers');
}
