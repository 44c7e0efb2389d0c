/**
 * Schemas of the serverless SDK's routes (docs/spec/client-compat-more.md §e): deployments and their versions, and
 * the autoscaler's routing call with its public key. Exported so the SDK takes its types from what the server
 * validates.
 */
import { Type } from 'typebox';
import { EndpointStateSchema } from './serverless-schemas.js';

const Int = Type.Integer();
const Num = Type.Number();
const NStr = Type.Union([Type.String(), Type.Null()]);
const NNum = Type.Union([Num, Type.Null()]);
const NInt = Type.Union([Int, Type.Null()]);
/** A key the client may send as null or leave out (the SDK leaves out nulls; others may not). */
const opt = <T>(o: Record<string, unknown>) => Type.Optional(Type.Unsafe<T | null>(o));
const str = (max: number, min = 0) => opt<string>({ type: ['string', 'null'], minLength: min, maxLength: max });
const num = (o: Record<string, unknown> = {}) => opt<number>({ type: ['number', 'null'], ...o });
const int = (o: Record<string, unknown> = {}) => opt<number>({ type: ['integer', 'null'], ...o });

/** A deployment's name and tag: what the SDK and `vastai delete deployment --name` name it by. */
const Name = Type.String({ minLength: 1, maxLength: 128 });
export const DEFAULT_TAG = 'default';
/** The tarball's hash names its object in the blob store: letters, digits, `.`, `_`, `-` only. */
const FileHash = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9._-]+$' });
/** Largest tarball a deployment may have (bytes). */
export const MAX_DEPLOYMENT_BYTES = 10 * 1024 ** 3;

/**
 * `PUT /api/v0/deployments/`: the SDK's DeploymentConfig (its non-null fields). Closed: any other key is a 400 naming
 * it. The endpoint scaling fields are the endpoint's (serverless-schemas.ts `EndpointBody`).
 */
export const DeploymentPutBody = Type.Object(
  {
    name: Name,
    image: Type.String({ minLength: 1, maxLength: 512 }),
    file_hash: FileHash,
    file_size: Type.Integer({ minimum: 0, maximum: MAX_DEPLOYMENT_BYTES }),
    env: str(4096),
    tag: str(64, 1),
    search_params: str(4096),
    storage: num({ exclusiveMinimum: 0, maximum: 100_000 }),
    ttl: num({ exclusiveMinimum: 0, maximum: 365 * 86_400 }),
    version_label: str(128),
    docker_login_user: str(1024),
    docker_login_pass: str(4096),
    docker_login_repo: str(1024),
    cold_workers: int({ minimum: 0 }),
    max_workers: int({ minimum: 1 }),
    min_load: num({ minimum: 0 }),
    min_cold_load: num({ minimum: 0 }),
    target_util: num(),
    cold_mult: num({ minimum: 0 }),
    max_queue_time: num({ minimum: 0 }),
    target_queue_time: num({ minimum: 0 }),
    inactivity_timeout: num({ minimum: 0 }),
    autoscaler_instance: str(64),
  },
  { additionalProperties: false },
);

/** The reply the SDK's DeploymentPutResponse reads; `upload_url` and `upload_fields` only when the tarball is needed. */
export const DeploymentPutReply = Type.Object({
  success: Type.Boolean(),
  action: Type.Union([Type.Literal('created'), Type.Literal('soft_update'), Type.Literal('autoscale_update'), Type.Literal('exists')], {
    description: 'created, soft_update (a new version), autoscale_update (settings only) or exists (nothing changed)',
  }),
  deployment_id: Int,
  endpoint_id: Int,
  workergroup_id: Int,
  version_id: Int,
  upload_url: Type.Optional(Type.String({ description: 'POST a multipart form here: upload_fields, then the tarball as `file`' })),
  upload_fields: Type.Optional(Type.Record(Type.String(), Type.String())),
  evicted_versions: Type.Array(Int, { description: 'versions dropped to keep at most MAX_DEPLOYMENT_VERSIONS' }),
});

/** A deployment as listed and shown (vastai's list and detail columns, the SDK's DeploymentData). */
export const DeploymentObject = Type.Object({
  id: Int, name: Type.String(), tag: Type.String(), image: Type.String(), env: NStr, search_params: NStr, storage: Num,
  endpoint_id: Int, workergroup_id: Int, endpoint_state: EndpointStateSchema, worker_count: Int,
  file_hash: Type.String(), file_size: Int, s3_key: Type.String(), version_label: NStr,
  current_version_id: Int, last_healthy_version_id: NInt, ttl: NNum, last_client_heartbeat: NNum,
  created_at: Num, updated_at: Num,
});

export const VersionObject = Type.Object({
  id: Int, deployment_id: Int, version_label: NStr, file_hash: Type.String(), file_size: Int, image: Type.String(),
  env: NStr, search_params: NStr, storage: Num, s3_key: Type.String(), created_at: Num, current: Type.Boolean(),
});

export const DeploymentsReply = Type.Object({ success: Type.Boolean(), deployments: Type.Array(DeploymentObject) });
export const DeploymentReply = Type.Object({ success: Type.Boolean(), deployment: DeploymentObject });
export const VersionsReply = Type.Object({ success: Type.Boolean(), versions: Type.Array(VersionObject) });
export const DeploymentOk = Type.Object({ success: Type.Boolean(), msg: Type.String() });

/** `DELETE /api/v0/deployments/` (`vastai delete deployment --name N [--tag T]`): every tag unless one is named. */
export const DeleteByNameBody = Type.Object({ name: Name, tag: str(64, 1) }, { additionalProperties: false });
export const DeleteByNameReply = Type.Object({ success: Type.Boolean(), count: Int, msg: Type.String() });

export const DownloadUrlReply = Type.Object({ success: Type.Boolean(), download_url: Type.String() });

/** `POST /route/`: what the serverless SDK's `Endpoint._route` sends. Closed. */
export const RouteBody = Type.Object(
  {
    endpoint: Type.String({ minLength: 1, maxLength: 128, description: 'the endpoint\'s name' }),
    api_key: str(512),
    cost: num({ minimum: 0, maximum: 1e12 }),
    request_idx: int({ minimum: 0, maximum: 2 ** 53 - 1 }),
    replay_timeout: num({ minimum: 0 }),
  },
  { additionalProperties: false },
);
export const RouteQuery = Type.Object({ api_key: Type.Optional(Type.String({ maxLength: 512 })) }, { additionalProperties: true });

/**
 * Ready (with `url`): the whole object is the `auth_data` the caller forwards to the worker, which needs `cost`,
 * `endpoint`, `reqnum`, `request_idx`, `signature` and `url`. Waiting (no `url` key at all): the SDK calls again
 * with `request_idx`.
 */
export const RouteReply = Type.Object({
  success: Type.Boolean(),
  status: Type.Union([Type.Literal('ready'), Type.Literal('waiting')]),
  endpoint: Type.String(),
  cost: Num,
  request_idx: Int,
  reqnum: Type.Optional(Int),
  url: Type.Optional(Type.String({ description: 'the worker\'s address, http://IP:PORT' })),
  signature: Type.Optional(Type.String({ description: 'base64 RSA PKCS#1 v1.5 SHA-256 over json.dumps({"url": url}, indent=4, sort_keys=True); key at /pubkey/' })),
  valid_until: Type.Optional(Type.Number({ description: 'Unix seconds until which auth_signature holds' })),
  auth_signature: Type.Optional(Type.String({
    description: 'the same signature over json.dumps({cost, endpoint, reqnum, request_idx, url, valid_until}, indent=4, sort_keys=True): '
      + 'a worker that checks it can refuse another endpoint\'s, an altered, a stale or a replayed auth_data (the pyworker checks only signature)',
  })),
  msg: Type.Optional(Type.String({ description: 'why no worker is ready' })),
});

export const PubkeyReply = Type.String({ description: 'the router\'s RSA public key, PEM (SubjectPublicKeyInfo)' });

/** Decisions an autoscaler log reply shows at most (the newest); `tail` asks for fewer lines. */
export const LOG_DECISIONS_MAX = 1000;

/**
 * `POST /get_endpoint_workers/`, `/get_endpoint_logs/`, `/get_autogroup_logs/` (autoscaler routes): the endpoint's or
 * workergroup's `id`; `api_key` is the caller's account key (the serverless SDK sends it here, with no header).
 */
export const AutoscalerIdBody = Type.Object(
  {
    id: Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1 }),
    api_key: str(512),
    tail: int({ minimum: 1, maximum: LOG_DECISIONS_MAX }),
  },
  { additionalProperties: false },
);

/** A worker as the serverless SDK's `Worker.from_dict` reads it. */
export const EndpointWorker = Type.Object({
  id: Int,
  status: Type.String({ description: 'the instance\'s actual_status (loading while it has none yet)' }),
  cur_load: Num, new_load: Num, cur_load_rolling_avg: Num, cur_perf: Num, perf: Num, measured_perf: Num, dlperf: Num,
  reliability: Num, reqs_working: Int, disk_usage: Num,
  loaded_at: Type.Number({ description: 'when it became running (epoch s), 0 before' }),
  started_at: Type.Number({ description: 'when it was rented (epoch s)' }),
});
export const EndpointWorkersReply = Type.Array(EndpointWorker);

/** The autoscaler's log at the four levels `vastai get endpt-logs --level 0..3` prints: one line per decision. */
export const EndpointLogsReply = Type.Object({
  success: Type.Boolean(), info0: Type.String(), info1: Type.String(), trace: Type.String(), debug: Type.String(),
});

/** `POST /api/v0/deployment/{id}/stop/` and `.../start/` (vastai sends `{}`). */
export const EmptyBody = Type.Object({}, { additionalProperties: false });
