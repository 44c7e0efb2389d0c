import { Type } from 'typebox';
import { Id } from '../platform/schemas.js';
import { SSH_KEY_MAX_CHARS } from '../ssh-keys/ssh-keys-types.js';

/**
 * Optional, and null allowed (the vastai client sends every key, null when unset). A JSON-schema type list, not an
 * anyOf: with ajv's type coercion an anyOf would turn `null` into `""`/`0`, or `0` into `null`.
 */
const nullable = <T>(schema: Record<string, unknown>) =>
  Type.Optional(Type.Unsafe<T | null>({ ...schema, type: [schema.type as string, 'null'] }));
const NStr = (max = 65536) => nullable<string>({ type: 'string', maxLength: max });
const NBool = () => nullable<boolean>({ type: 'boolean' });
const NNum = (o: { exclusiveMinimum: number; maximum: number }) => nullable<number>({ type: 'number', ...o });

/**
 * Creation body (spec: Instance creation fields; client-compat). Every key may be null (= not given); keys the
 * client adds (`client_id`, `extra`, `force`, `user`) are accepted. `env`, `volume_info` and `args` are checked by
 * the service, which names the spec rule a bad value breaks.
 */
export const CreateBody = Type.Object(
  {
    image: NStr(512),
    template_hash_id: NStr(128),
    template_id: Type.Optional(Type.Unknown()),
    label: NStr(1024),
    disk: NNum({ exclusiveMinimum: 0, maximum: 1_000_000 }),
    runtype: NStr(256),
    args: Type.Optional(Type.Unknown()),
    args_str: NStr(),
    target_state: nullable<'running' | 'stopped'>({ type: 'string', enum: ['running', 'stopped', null] }),
    price: NNum({ exclusiveMinimum: 0, maximum: 1_000_000 }),
    env: Type.Optional(Type.Unknown()),
    onstart: NStr(1024 * 1024),
    use_jupyter_lab: NBool(),
    jupyter_dir: NStr(1024),
    python_utf8: NBool(),
    lang_utf8: NBool(),
    image_login: NStr(2048),
    cancel_unavail: NBool(),
    vm: NBool(),
    volume_info: Type.Optional(Type.Unknown()),
    // Sent by the vastai client and kept with the instance's options as given.
    extra: Type.Optional(Type.Unknown()),
    force: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: true },
);

export const CreateReply = Type.Object({ success: Type.Boolean(), new_contract: Type.Integer(), instance_api_key: Type.String() });

export const InstanceObject = Type.Object(
  { id: Type.Integer(), actual_status: Type.Union([Type.String(), Type.Null()]), start_date: Type.Number(), extra_env: Type.Array(Type.Array(Type.String())) },
  { additionalProperties: true },
);

export const IdParams = Type.Object({ id: Id() });
export const OfferParams = Type.Object({ offer_id: Type.Integer({ minimum: 1 }) });

/**
 * `PUT /instances/{id}/`: open, as the other instance bodies here: the clients send `{state}` or `{label}` (vastai
 * adds `client_id` to some), extra keys are ignored; owner and system columns are 400s (platform/validation.ts).
 */
export const UpdateBody = Type.Object(
  {
    state: Type.Optional(Type.Union([Type.Literal('running'), Type.Literal('stopped')])),
    label: NStr(1024),
  },
  { additionalProperties: true },
);

export const BulkBody = Type.Object({
  state: Type.Union([Type.Literal('running'), Type.Literal('stopped')]),
  ids: Type.Array(Id(), { minItems: 1, maxItems: 1000 }),
});

export const V1ListQuery = Type.Object(
  {
    select_filters: Type.Optional(Type.String({ maxLength: 8192 })),
    order_by: Type.Optional(Type.String({ maxLength: 2048 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
    after_token: Type.Optional(Type.String({ maxLength: 4096 })),
  },
  { additionalProperties: true },
);

export const WaitQuery = Type.Object(
  {
    until: Type.Optional(
      Type.Union(['running', 'stopped', 'loading', 'exited', 'unknown', 'offline'].map((s) => Type.Literal(s)), { default: 'running' }),
    ),
    timeout: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 600, default: 60 })),
  },
  { additionalProperties: true },
);

export const EventsQuery = Type.Object(
  {
    since: Type.Optional(Type.Integer({ minimum: 0 })),
    max_events: Type.Optional(Type.Integer({ minimum: 1, maximum: 100000 })),
    timeout: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 86400 })),
  },
  { additionalProperties: true },
);

export const LogsBody = Type.Object(
  {
    tail: nullable<number>({ type: 'integer', minimum: 1, maximum: 100000 }),
    filter: NStr(256),
  },
  { additionalProperties: true },
);

/** Reply of a change that may carry a message (`PUT /instances/{id}/`, the bulk start/stop). */
export const OkReply = Type.Object({ success: Type.Boolean(), msg: Type.Optional(Type.String()) }, { additionalProperties: true });

/** `PUT /api/v0/instances/` `{state, ids}`: `ids` changed, `failed` the others with their error; `msg` when some failed. */
export const BulkReply = Type.Object(
  {
    success: Type.Boolean(),
    ids: Type.Array(Type.Integer()),
    failed: Type.Array(Type.Object({ id: Type.Integer(), error: Type.String(), msg: Type.String() })),
    msg: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);

/** `GET /api/v0/instances/`. */
export const InstancesReply = Type.Object({ instances_found: Type.Integer(), instances: Type.Array(InstanceObject) });

/** `GET /api/v1/instances/`: one page; `next_token` is the `after_token` of the next. */
export const InstancesPage = Type.Object({
  instances: Type.Array(InstanceObject),
  next_token: Type.Union([Type.String(), Type.Null()]),
  total_instances: Type.Integer(),
});

/**
 * `GET /api/v0/instances/{id}/`: `instances` is null for an instance that does not exist, is destroyed or is not the
 * caller's (vast.py `show instance` reads exactly that: "not found or no longer exists"; the client wins over the
 * spec's 404, issue 29 item 2).
 */
export const InstanceReply = Type.Object({ instances: Type.Union([InstanceObject, Type.Null()]) });

/** `GET /api/v0/instances/{id}/wait`. */
export const WaitReply = Type.Object({ success: Type.Boolean(), id: Type.Integer(), actual_status: Type.String() });

/** `PUT /api/v0/instances/bid_price/{id}/`: the new bid in $/hour. */
export const BidBody = Type.Object({ price: Type.Number({ exclusiveMinimum: 0, maximum: 1_000_000 }) }, { additionalProperties: true });

/** `PUT /api/v0/instances/request_logs/{id}/`. */
export const LogsReply = Type.Object({ success: Type.Boolean(), result_url: Type.String(), msg: Type.String() });

export const LogTokenParams = Type.Object({ token: Type.String({ pattern: '^[A-Za-z0-9_-]{16,128}$' }) });

/** `POST /api/v0/instances/{id}/ssh/`. */
export const AttachSshBody = Type.Object({ ssh_key: Type.String({ minLength: 1, maxLength: SSH_KEY_MAX_CHARS }) }, { additionalProperties: true });
export const AttachSshReply = Type.Object({ success: Type.Boolean(), key_id: Type.Integer(), msg: Type.String() });

/** `GET /api/v0/instances/{id}/ssh/`. */
export const InstanceSshKey = Type.Object({ id: Type.Integer(), ssh_key: Type.String(), created_at: Type.Number() });
export const InstanceSshKeysReply = Type.Object({ success: Type.Boolean(), ssh_keys: Type.Array(InstanceSshKey) });

export const SshKeyParams = Type.Object({ id: Id(), key_id: Id() });

/** One state change of an instance: the data of an `event: instance` frame of the event stream. */
export const InstanceEvent = Type.Object({
  id: Type.Integer({ description: 'the instance' }),
  actual_status: Type.Union([Type.String(), Type.Null()]),
  intended_status: Type.Union([Type.String(), Type.Null()]),
  status_msg: Type.Union([Type.String(), Type.Null()]),
  at: Type.Number({ description: 'Unix seconds on the service clock' }),
});
export const HistoryReply = Type.Object({ success: Type.Boolean(), events: Type.Array(InstanceEvent) });
