import type { Generated } from 'kysely';

/**
 * Instance tables. Same schema on SQLite and PostgreSQL: booleans 0/1, times Unix seconds, money micro-dollars,
 * JSON as text.
 */
export interface InstancesTable {
  id: Generated<number>;
  user_id: number;
  team_id: number | null;
  offer_id: number;
  /** Null only between the row insert and the allocation, inside the creation transaction. */
  machine_id: number | null;
  host_id: number | null;
  num_gpus: number;
  /** JSON array of the GPU indexes held now; `[]` while stopped. */
  gpu_indexes: string;
  /** JSON snapshot of the offer as it was when rented (hardware fields shown on the instance). */
  offer_snapshot: string;
  image: string;
  /** Registry credentials, sealed with the SecretBox (never shown). */
  image_login_sealed: string | null;
  /** Spec runtype: ssh_direct, ssh_proxy, jupyter_direct, jupyter_proxy, args. */
  runtype: string;
  args_str: string | null;
  /** JSON object of environment variables (no port flags). */
  /** The account environment variables at creation, sealed (JSON object); null when there were none. */
  account_env_sealed?: string | null;
  /** The instance key, sealed, for the container's `CONTAINER_API_KEY`; null for instances made before migration 0045. */
  api_key_sealed?: string | null;
  /**
   * A Jupyter runtype's token (issue 32), sealed: shown to the owner (`jupyter_token`, `jupyter_url`) and put in the
   * container as `JUPYTER_TOKEN`. Null for other runtypes and for instances made before migration 0048.
   */
  jupyter_token_sealed?: string | null;
  env: string;
  /** JSON array of extra container ports from `-p` keys, e.g. `["8081/udp"]`. */
  port_maps: string;
  hostname: string | null;
  onstart: string | null;
  label: string | null;
  disk: number;
  is_bid: number;
  /** Bid per GPU, micro-dollars per hour (bid instances). */
  bid_per_gpu_micro: number | null;
  /** Compute price of the whole instance while running, micro-dollars per hour. */
  gpu_rate_micro: number;
  /** Disk price of the whole instance while it exists, micro-dollars per hour. */
  disk_rate_micro: number;
  actual_status: string | null;
  intended_status: string;
  status_msg: string | null;
  /** JSON `{"22/tcp": [{HostIp, HostPort}]}` while running, else null. */
  ports: string | null;
  template_hash_id: string | null;
  template_id: number | null;
  vm: number;
  jupyter_dir: string | null;
  use_jupyter_lab: number;
  /** JSON of other creation options kept for display (python_utf8, lang_utf8, extra …). */
  options: string;
  volume_info: string | null;
  created_at: number;
  /** When it last became running (uptime), or null. */
  running_since: number | null;
  /** Bumped on every state change (a host may tell one boot from the next by it). */
  state_version: number;
  destroyed_at: number | null;
  /** Bumped when the container must be made anew (recycle, update): a real host recreates an older one. */
  generation: number;
  /** 1 when this generation's image is pulled afresh even if the host has it (recycle). */
  repull: number;
}

/** Every state change of an instance, in order: the SSE stream and the history read it. */
export interface InstanceEventsTable {
  id: Generated<number>;
  instance_id: number;
  user_id: number;
  team_id: number | null;
  actual_status: string | null;
  intended_status: string;
  status_msg: string | null;
  at: number;
}

/** `Idempotency-Key` → the first reply of a create, per user, for IDEMPOTENCY_RETENTION_S. */
export interface InstanceIdempotencyTable {
  id: Generated<number>;
  user_id: number;
  idem_key: string;
  /** SHA-256 of the offer id and body: the same key with another request is refused. */
  request_hash: string;
  /** The reply as instances-create.ts's IdempotencyRecord: the instance id, its key sealed (never in clear). */
  reply: string;
  created_at: number;
}

/** SSH public keys attached to an instance (contract §3). */
export interface InstanceSshKeysTable {
  id: Generated<number>;
  instance_id: number;
  ssh_key: string;
  created_at: number;
}

/** A `request_logs` result: `result_url` carries a random token; only its SHA-256 is stored. */
export interface InstanceLogRequestsTable {
  id: Generated<number>;
  instance_id: number;
  token_hash: string;
  tail: number | null;
  filter: string | null;
  expires_at: number;
}

/**
 * An `execute` request (`PUT /instances/command/{id}/`): the command as argv, and its output once the host
 * produced it. `result_url` carries a random token (only its SHA-256 here) and serves the output
 * once: `fetched_at` is set by the first fetch, and the output is dropped then.
 */
export interface InstanceCommandsTable {
  id: Generated<number>;
  instance_id: number;
  machine_id: number;
  /** The id the machine's agent answers to (not a secret: only that machine's key can answer). */
  request_id: string;
  token_hash: string;
  /** JSON array of strings. */
  argv: string;
  output: string | null;
  answered_at: number | null;
  fetched_at: number | null;
  created_at: number;
  expires_at: number;
}

/** A `take snapshot` request: commit the container and push it as `image`; `error` once the host says it failed. */
export interface InstanceSnapshotsTable {
  id: Generated<number>;
  instance_id: number;
  machine_id: number;
  request_id: string;
  /** The reference pushed: `<registry>/<repo>[:tag]`. */
  image: string;
  /** JSON `{username, password, server}` sealed with the SecretBox; null without a login, and once answered. */
  login_sealed: string | null;
  pause: number;
  error: string | null;
  answered_at: number | null;
  created_at: number;
}

export interface InstancesTables {
  instances: InstancesTable;
  instance_events: InstanceEventsTable;
  instance_idempotency: InstanceIdempotencyTable;
  instance_ssh_keys: InstanceSshKeysTable;
  instance_log_requests: InstanceLogRequestsTable;
  instance_commands: InstanceCommandsTable;
  instance_snapshots: InstanceSnapshotsTable;
}
