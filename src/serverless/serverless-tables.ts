import type { Generated } from 'kysely';

/**
 * Serverless: endpoints, their workergroups, the workers (real instances) the simulated autoscaler rents for them,
 * and every autoscaler decision. Booleans 0/1, times Unix seconds, as everywhere.
 */
export interface ServerlessEndpointsTable {
  id: Generated<number>;
  user_id: number;
  team_id: number | null;
  endpoint_name: string;
  min_load: number;
  min_cold_load: number;
  target_util: number;
  cold_mult: number;
  cold_workers: number;
  max_workers: number;
  max_queue_time: number | null;
  target_queue_time: number | null;
  inactivity_timeout: number | null;
  /** Current load (perf units per second), set through the emulator: what the simulated autoscaler follows. */
  load: number;
  created_at: number;
  deleted_at: number | null;
}

export interface ServerlessWorkergroupsTable {
  id: Generated<number>;
  endpoint_id: number;
  user_id: number;
  team_id: number | null;
  template_hash: string;
  /** The CLI's query string as given, and the filter body it parses to (JSON). */
  search_params: string;
  search_filter: string;
  launch_args: string | null;
  gpu_ram: number | null;
  /** Overrides of the endpoint's settings; null inherits. */
  min_load: number | null;
  target_util: number | null;
  cold_mult: number | null;
  cold_workers: number | null;
  max_workers: number | null;
  test_workers: number | null;
  created_at: number;
  deleted_at: number | null;
}

/** Instances a workergroup rented; `released_at` once destroyed by the autoscaler or with the endpoint. */
export interface ServerlessWorkersTable {
  instance_id: number;
  workergroup_id: number;
  created_at: number;
  released_at: number | null;
}

export interface ServerlessDecisionsTable {
  id: Generated<number>;
  workergroup_id: number;
  at: number;
  load: number;
  workers_before: number;
  target: number;
  /** `scale_up`, `scale_down`, `hold`, `release`. */
  action: string;
  reason: string;
  /** JSON list of the instances rented or destroyed. */
  instances: string;
}

export interface ServerlessTables {
  serverless_endpoints: ServerlessEndpointsTable;
  serverless_workergroups: ServerlessWorkergroupsTable;
  serverless_workers: ServerlessWorkersTable;
  serverless_decisions: ServerlessDecisionsTable;
}
