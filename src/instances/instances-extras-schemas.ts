/**
 * Instance extras (docs/spec/client-compat-more.md §c): reboot, recycle, update, execute, take snapshot, and the cloud
 * copy routes gpuplane cannot serve yet. Bodies are closed where the clients' keys are known, so a typo is a 400.
 */
import { Type } from 'typebox';
import { InstanceObject } from './instances-schemas.js';

/** Optional, null allowed (= not given), as the vastai client sends unset options. */
const nullable = <T>(schema: Record<string, unknown>) =>
  Type.Optional(Type.Unsafe<T | null>({ ...schema, type: [schema.type as string, 'null'] }));
const NStr = (max: number) => nullable<string>({ type: 'string', maxLength: max });

/** `PUT /instances/reboot/{id}/` and `/instances/recycle/{id}/`: the clients send `{}`. */
export const EmptyBody = Type.Object({}, { additionalProperties: true });

export const ActionReply = Type.Object({ success: Type.Boolean(), msg: Type.String() });

/**
 * `PUT /instances/update_template/{id}/`: `{"id": id}` plus only the options given. `args` is one string (the
 * client's `--args`; the SDK passes what it is given, so a list of strings is taken too), `env` an object as at
 * creation. Both are checked by the service.
 */
export const UpdateTemplateBody = Type.Object(
  {
    id: nullable<number>({ type: 'integer', minimum: 1 }),
    template_id: nullable<number>({ type: 'integer', minimum: 1 }),
    template_hash_id: NStr(128),
    image: NStr(512),
    args: Type.Optional(Type.Unknown()),
    env: Type.Optional(Type.Unknown()),
    onstart: NStr(1024 * 1024),
  },
  { additionalProperties: false },
);

/** vastai prints `updated_instance` after "Instance N updated successfully." */
export const UpdateTemplateReply = Type.Object({ success: Type.Boolean(), msg: Type.String(), updated_instance: InstanceObject });

/**
 * `PUT /instances/command/{id}/` `{command}`. `instance_id` is what a scheduled replay of the vastai client's
 * `execute --schedule` adds (docs/spec/client-compat-more.md §d).
 */
export const ExecuteBody = Type.Object(
  {
    command: Type.String({ minLength: 1, maxLength: 8192 }),
    instance_id: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: false },
);

/**
 * The clients GET `result_url` without a key until it answers 200, and print its text with `writeable_path` removed.
 * gpuplane runs the command in the container itself, so its output has no host path to remove: `writeable_path` is
 * empty (removing "" changes nothing).
 */
export const ExecuteReply = Type.Object({ success: Type.Boolean(), result_url: Type.String(), writeable_path: Type.String(), msg: Type.String() });

export const CommandTokenQuery = Type.Object({ token: Type.String({ pattern: '^[A-Za-z0-9_-]{16,128}$' }) }, { additionalProperties: false });

/**
 * `POST /instances/take_snapshot/{id}/`. The client sends `id` as a string and `pause` as the string "true" or
 * "false"; a JSON boolean is taken too.
 */
export const SnapshotBody = Type.Object(
  {
    id: Type.Optional(Type.Unsafe<string | number | null>({ type: ['string', 'integer', 'null'], maxLength: 16 })),
    container_registry: NStr(255),
    personal_repo: NStr(255),
    docker_login_user: NStr(512),
    docker_login_pass: NStr(4096),
    pause: Type.Optional(Type.Unsafe<string | boolean | null>({ type: ['string', 'boolean', 'null'], maxLength: 5 })),
  },
  { additionalProperties: false },
);

export const Snapshot = Type.Object({
  id: Type.Integer(),
  /** The reference pushed. */
  image: Type.String(),
  /** `pending` until the host reports, then `pushed` or `failed` (with `error`). */
  status: Type.Union([Type.Literal('pending'), Type.Literal('pushed'), Type.Literal('failed')]),
  error: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.Number(),
  finished_at: Type.Union([Type.Number(), Type.Null()]),
});

/** `GET /instances/snapshots/{id}/` (gpuplane): the instance's snapshot requests and how each went. */
export const SnapshotsReply = Type.Object({ success: Type.Boolean(), snapshots: Type.Array(Snapshot) });

/** `DELETE /commands/rclone/` `{client_id, dst_id}` (cancel sync; copy's own is src/copy/copy-schemas.ts). */
export const CancelCopyBody = Type.Object(
  { client_id: Type.Optional(Type.Unknown()), dst_id: Type.Optional(Type.Unknown()) },
  { additionalProperties: true },
);

/** `POST /commands/rclone/` (cloud copy). */
export const CloudCopyBody = Type.Object(
  {
    src: NStr(4096),
    dst: NStr(4096),
    instance_id: Type.Optional(Type.Unknown()),
    selected: Type.Optional(Type.Unknown()),
    transfer: NStr(64),
    flags: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: true },
);
