/**
 * TypeBox schemas of the serverless routes (spec: Create serverless endpoint; contract §3), exported so the SDK takes
 * its request and reply types from what the server validates (`import type` + `Static<>`). The service's endpoint,
 * workergroup and decision objects have these schemas' types.
 */
import { Type } from 'typebox';
import { Id } from '../platform/schemas.js';

/** An endpoint's state: `stopped` by `stop deployment` (its autoscaler keeps no workers), else `active`. */
export const EndpointStateSchema = Type.Union([Type.Literal('active'), Type.Literal('stopped')]);

export const ServerlessOk = Type.Object({ success: Type.Boolean(), msg: Type.String() });
export const IdParams = Type.Object({ id: Id() });

/** The client sends every key, null when unset (client-compat: Serverless): a type list with null. */
const num = (o: Record<string, unknown> = {}) => Type.Optional(Type.Unsafe<number | null>({ type: ['number', 'null'], ...o }));
const int = (o: Record<string, unknown> = {}) => Type.Optional(Type.Unsafe<number | null>({ type: ['integer', 'null'], ...o }));
const str = (max: number) => Type.Optional(Type.Unsafe<string | null>({ type: ['string', 'null'], maxLength: max }));

/**
 * The endpoint fields a body may set (spec: Create serverless endpoint, plus the fields the clients send for the
 * autoscaler). Owner and system columns (`id`, `user_id`, `team_id`, `load`, `created_at`, `deleted_at` …) are not
 * among them.
 */
export const ENDPOINT_SETTABLE = [
  'endpoint_name', 'min_load', 'min_cold_load', 'target_util', 'cold_mult', 'cold_workers', 'max_workers',
  'max_queue_time', 'target_queue_time', 'inactivity_timeout',
] as const;
const endpointFields = {
  min_load: num({ minimum: 0 }), min_cold_load: num({ minimum: 0 }), target_util: num(), cold_mult: num({ minimum: 0 }),
  cold_workers: int({ minimum: 0 }), max_workers: int({ minimum: 1 }), endpoint_name: str(128),
  max_queue_time: num({ minimum: 0 }), target_queue_time: num({ minimum: 0 }), inactivity_timeout: num({ minimum: 0 }),
};
/**
 * Keys the clients send that gpuplane accepts and does not store: `client_id` ("me") and `autoscaler_instance`
 * ("prod") from the vastai CLI (api/endpoints.py) and vast.py; `endpoint_state` from `update endpoint` and the
 * serverless SDK's EndpointConfig (gpuplane's endpoints are always `active`).
 */
const endpointClientKeys = { client_id: str(64), autoscaler_instance: str(64), endpoint_state: str(32) };

/**
 * Closed: the settable fields and the client keys above, nothing else; any other key is a 400 naming it, so no body
 * key can reach a column (issue 11: `{"user_id": …}` gave the endpoint away).
 */
export const EndpointBody = Type.Object({ ...endpointFields, ...endpointClientKeys }, { additionalProperties: false });
/** `PUT /endptjobs/{id}/`: the same, plus `endptjob_id`, which vastai and vast.py repeat from the path. */
export const EndpointUpdateBody = Type.Object(
  { ...endpointFields, ...endpointClientKeys, endptjob_id: int() },
  { additionalProperties: false },
);

/** The workergroup fields a body may set on create; an update changes the settings, `test_workers` and the query. */
const workergroupFields = {
  min_load: num({ minimum: 0 }), target_util: num(), cold_mult: num({ minimum: 0 }), cold_workers: int({ minimum: 0 }),
  max_workers: int({ minimum: 1 }), test_workers: int({ minimum: 0 }), template_hash: str(128), template_id: int(),
  search_params: str(4096), launch_args: str(4096), gpu_ram: num({ minimum: 0 }), endpoint_name: str(128), endpoint_id: int({ minimum: 1 }),
};
/**
 * Keys the clients send that gpuplane accepts and does not store: `client_id`, `autoscaler_instance` (vastai,
 * vast.py); `min_cold_load` and the registry login `docker_login_user/pass/repo` (the serverless SDK's
 * WorkergroupConfig; a workergroup pulls with its template's login).
 */
const workergroupClientKeys = {
  client_id: str(64), autoscaler_instance: str(64), min_cold_load: num({ minimum: 0 }),
  docker_login_user: str(1024), docker_login_pass: str(4096), docker_login_repo: str(1024),
};
/** Closed, as the endpoint's body. */
export const WorkergroupBody = Type.Object({ ...workergroupFields, ...workergroupClientKeys }, { additionalProperties: false });
/**
 * `POST /workergroups/` (the serverless SDK's WorkergroupConfig, docs/spec/client-compat-more.md §e): the same fields;
 * `search_params` is always sent and may also be a filter object (the offers' filter body) instead of a query string.
 */
export const WorkergroupSdkBody = Type.Object(
  {
    ...workergroupFields,
    ...workergroupClientKeys,
    search_params: Type.Optional(Type.Unsafe<string | Record<string, unknown> | null>({ type: ['string', 'object', 'null'], maxLength: 4096 })),
  },
  { additionalProperties: false },
);
/** `PUT /autojobs/{id}/`: the same, plus `autojob_id`, which vastai and vast.py repeat from the path. */
export const WorkergroupUpdateBody = Type.Object(
  { ...workergroupFields, ...workergroupClientKeys, autojob_id: int() },
  { additionalProperties: false },
);

const Int = Type.Integer();
const Num = Type.Number();
const NInt = Type.Union([Int, Type.Null()]);
const NNum = Type.Union([Num, Type.Null()]);

/** An endpoint as listed: its settings, its load and how many workers its workergroups keep. */
export const EndpointObject = Type.Object(
  {
    id: Int, user_id: Int, team_id: NInt, endpoint_name: Type.String(),
    min_load: Num, min_cold_load: Num, target_util: Num, cold_mult: Num, cold_workers: Int, max_workers: Int,
    max_queue_time: NNum, target_queue_time: NNum, inactivity_timeout: NNum,
    load: Type.Number({ description: 'perf units per second (set through the emulator)' }), created_at: Num,
    endpoint_state: EndpointStateSchema, workers: Int,
    api_key: Type.String({ description: 'the endpoint\'s own key: POST /route/ authenticates with it' }),
    auto_delete_in_seconds: Type.Null({ description: 'endpoints are never deleted automatically' }),
    auto_delete_due_24h: Type.Boolean(),
  },
  { additionalProperties: true },
);

/** The settings the autoscaler follows: the workergroup's, else its endpoint's. */
export const ScalingSettings = Type.Object({ min_load: Num, target_util: Num, cold_mult: Num, cold_workers: Int, max_workers: Int });

/** A workergroup as listed: its own settings (null inherits the endpoint's), the ones in effect and its workers. */
export const WorkergroupObject = Type.Object(
  {
    id: Int, endpoint_id: Int, user_id: Int, team_id: NInt, template_hash: Type.String(), search_params: Type.String(),
    launch_args: Type.Union([Type.String(), Type.Null()]), gpu_ram: NNum,
    min_load: NNum, target_util: NNum, cold_mult: NNum, cold_workers: NInt, max_workers: NInt, test_workers: NInt, created_at: Num,
    endpoint_name: Type.Union([Type.String(), Type.Null()]),
    search_query: Type.Object({}, { additionalProperties: true, description: 'the offer filter body search_params parses to' }),
    effective: Type.Union([ScalingSettings, Type.Null()]), workers: Type.Array(Int),
    deployment_id: Type.Union([Int, Type.Null()], { description: 'the deployment this workergroup runs, if any' }),
  },
  { additionalProperties: true },
);

/** One run of the autoscaler for a workergroup. */
export const DecisionObject = Type.Object(
  {
    id: Int, workergroup_id: Int, at: Num, load: Num, workers_before: Int, target: Int,
    action: Type.String({ description: 'scale_up, scale_down, hold or release' }), reason: Type.String(),
    instances: Type.Array(Int, { description: 'the instances rented or destroyed' }),
  },
  { additionalProperties: true },
);

export const CreateEndpointReply = Type.Object({ success: Type.Boolean(), result: Type.Integer() });
export const EndpointsReply = Type.Object({ success: Type.Boolean(), results: Type.Array(EndpointObject) });
/** `GET /endptjobs/{id}/` (the serverless SDK's fetch_endpoint). */
export const EndpointReply = Type.Object({ success: Type.Boolean(), result: EndpointObject });
export const CreateWorkergroupReply = Type.Object({ success: Type.Boolean(), id: Type.Integer() });
export const WorkergroupsReply = Type.Object({ success: Type.Boolean(), results: Type.Array(WorkergroupObject) });
export const DecisionsReply = Type.Object({ success: Type.Boolean(), decisions: Type.Array(DecisionObject) });

/** Largest load one endpoint may be given (perf units per second). */
const MAX_LOAD = 1e9;

/** `POST /_emu/endpoints/{id}/load` (emulator): the load the simulated autoscaler follows from its next run. */
export const EmuLoadBody = Type.Object({ load: Type.Number({ minimum: 0, maximum: MAX_LOAD }) });
export const EmuLoadReply = Type.Object({ success: Type.Boolean(), load: Type.Number() });
