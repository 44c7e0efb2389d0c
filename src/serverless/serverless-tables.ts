import type { Generated } from 'kysely';

/**
 * Serverless: endpoints, their workergroups, the workers (real instances) the simulated autoscaler rents for them,
 * and every autoscaler decision. Booleans 0/1, times Unix seconds, as everywhere.
 */
export type EndpointState = 'active' | 'stopped';

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
  /** `active`, or `stopped` (`stop deployment`): a stopped endpoint keeps no workers. */
  endpoint_state: Generated<EndpointState>;
  created_at: number;
  deleted_at: number | null;
  /**
   * The endpoint's own API key (`api_key` of the endpoint object; `POST /route/` authenticates with it): its SHA-256
   * for the lookup and the key sealed with the secret key to show it. Null on endpoints made before 0025 until first
   * read (serverless-keys.ts).
   */
  api_key_hash: string | null;
  api_key_sealed: string | null;
  /** Requests routed so far: the `reqnum` of the next `POST /route/` reply. */
  reqnum: number;
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
  /** The deployment whose workers this group runs (their image and env come from its current version); else null. */
  deployment_id: number | null;
}

/** Instances a workergroup rented; `released_at` once destroyed by the autoscaler or with the endpoint. */
export interface ServerlessWorkersTable {
  instance_id: number;
  workergroup_id: number;
  created_at: number;
  released_at: number | null;
  /**
   * SHA-256 of the worker's own MASTER_TOKEN (given in its environment when rented; the pyworker sends it with each
   * report). Null for workers rented before 0052, which cannot report.
   */
  mtoken_hash: string | null;
  /** When its last report came (`POST /worker_status/`); null while it never reported. */
  reported_at: number | null;
  /** 1 once a report says its model is loaded (`loadtime` above 0) with no error. */
  loaded: Generated<number>;
  /** The error its last report carried (`error_msg`), or null. */
  error_msg: string | null;
  /** Its last report's load (`cur_load`), measured performance (`max_perf`) and work done since the one before. */
  cur_load: Generated<number>;
  max_perf: Generated<number>;
  cur_perf: Generated<number>;
  /** The address it says it answers at (`url`): shown, never signed (the router signs what its host reported). */
  reported_url: string | null;
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

/**
 * A deployment (the serverless SDK's `vastai.serverless.remote`): a named, tagged bundle of code (a tarball in the blob
 * store), an image and autoscaling settings, run by an endpoint and one workergroup made with it.
 */
export interface ServerlessDeploymentsTable {
  id: Generated<number>;
  user_id: number;
  team_id: number | null;
  name: string;
  tag: string;
  endpoint_id: number;
  workergroup_id: number;
  current_version_id: number;
  last_healthy_version_id: number | null;
  /** Seconds without a client heartbeat after which the deployment is deleted; null keeps it. */
  ttl: number | null;
  last_client_heartbeat: number | null;
  created_at: number;
  updated_at: number;
  deleted_at: number | null;
}

/** One version of a deployment: what its workers run while it is current. */
export interface ServerlessDeploymentVersionsTable {
  id: Generated<number>;
  deployment_id: number;
  version_label: string | null;
  file_hash: string;
  file_size: number;
  image: string;
  /** The container options as the SDK sends them (`-p 3000:3000/tcp -e K=V`), or null. */
  env: string | null;
  search_params: string | null;
  /** Worker disk, GB. */
  storage: number;
  /** Registry login (`-u USER -p PASS REPO`), sealed with the secret key; never shown. */
  image_login_sealed: string | null;
  /** The tarball's key in the blob store. */
  s3_key: string;
  created_at: number;
}

export interface ServerlessTables {
  serverless_endpoints: ServerlessEndpointsTable;
  serverless_workergroups: ServerlessWorkergroupsTable;
  serverless_workers: ServerlessWorkersTable;
  serverless_decisions: ServerlessDecisionsTable;
  serverless_deployments: ServerlessDeploymentsTable;
  serverless_deployment_versions: ServerlessDeploymentVersionsTable;
}
