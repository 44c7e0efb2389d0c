import { Type, type Static, type TSchema } from 'typebox';

/** Length caps on template text fields: generous for real templates, bounded so a row cannot be abused as storage. */
export const TEMPLATE_TEXT_MAX = 4096;
export const TEMPLATE_LONG_TEXT_MAX = 65_536;

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
// Request fields use JSON-schema type lists, not anyOf: with Ajv's coerceTypes an anyOf branch would coerce a null
// into "" or false, and "null = not given" (what the vastai client sends for unset fields) would silently clear data.
const Text = (max = TEMPLATE_TEXT_MAX) => Type.Unsafe<string | null>({ type: ['string', 'null'], maxLength: max });
const Flag = () => Type.Unsafe<boolean | null>({ type: ['boolean', 'null'] });
const JsonObject = () => Type.Unsafe<Record<string, unknown> | null>({ type: ['object', 'null'] });

/**
 * The editable template fields (spec: Template). Every one may be `null`, meaning "not given": the vastai client
 * sends every key, null when unset. Fields the client adds that gpuplane does not know are ignored.
 */
const editableFields = {
  name: Text(200),
  image: Text(1024),
  tag: Text(200),
  desc: Text(),
  readme: Text(TEMPLATE_LONG_TEXT_MAX),
  readme_visible: Flag(),
  env: Text(16_384),
  onstart: Text(TEMPLATE_LONG_TEXT_MAX),
  runtype: Type.Unsafe<'ssh' | 'jupyter' | 'args' | null>({ type: ['string', 'null'], enum: ['ssh', 'jupyter', 'args', null] }),
  args_str: Text(),
  ssh_direct: Flag(),
  use_ssh: Flag(),
  jup_direct: Flag(),
  jupyter_dir: Text(1024),
  use_jupyter_lab: Flag(),
  docker_login_repo: Text(1024),
  docker_login_user: Text(1024),
  docker_login_pass: Text(4096),
  href: Text(2048),
  repo: Text(1024),
  extra_filters: JsonObject(),
  // The vastai client sends it as a string ("8.0"); the service coerces it.
  recommended_disk_space: Type.Unsafe<number | string | null>({ type: ['number', 'string', 'null'], maxLength: 32 }),
  private: Flag(),
  volume_info: JsonObject(),
};

export const CreateTemplateBody = Type.Object(
  { ...Object.fromEntries(Object.entries(editableFields).map(([k, v]) => [k, Type.Optional(v)])) } as {
    [K in keyof typeof editableFields]: ReturnType<typeof Type.Optional<(typeof editableFields)[K]>>;
  },
  { additionalProperties: true },
);
export type CreateTemplateBody = Static<typeof CreateTemplateBody>;

/** Open, as create: unknown keys are ignored; owner and system columns (`user_id`, `creator_id` …) are 400s. */
export const UpdateTemplateBody = Type.Intersect([
  Type.Object({ hash_id: Type.String({ minLength: 1, maxLength: 128 }) }, { additionalProperties: true }),
  CreateTemplateBody,
]);
export type UpdateTemplateBody = Static<typeof UpdateTemplateBody>;

/** Contract §6: the numeric id, or the hash_id; a hash given as `template_id` fails the integer schema (400). */
export const DeleteTemplateBody = Type.Object(
  {
    template_id: Type.Optional(Type.Integer({ minimum: 1, maximum: 2_147_483_647 })),
    hash_id: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  },
  { additionalProperties: true },
);
export type DeleteTemplateBody = Static<typeof DeleteTemplateBody>;

export const SearchTemplatesQuery = Type.Object(
  {
    select_filters: Type.Optional(Type.String({ maxLength: 16_384 })),
    select_cols: Type.Optional(Type.String({ maxLength: 4096 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  },
  { additionalProperties: true },
);
export type SearchTemplatesQuery = Static<typeof SearchTemplatesQuery>;

/** A template as the API shows it: the spec's fields plus its additional search fields. */
export const TemplateObject = Type.Object({
  id: Type.Integer(),
  hash_id: Type.String(),
  name: Type.String(),
  image: Type.String(),
  tag: Type.String(),
  desc: Type.String(),
  readme: Type.String(),
  readme_visible: Type.Boolean(),
  env: Type.String(),
  onstart: Type.String(),
  runtype: Type.String(),
  args_str: Type.String(),
  ssh_direct: Type.Boolean(),
  use_ssh: Type.Boolean(),
  jup_direct: Type.Boolean(),
  jupyter_dir: Nullable(Type.String()),
  use_jupyter_lab: Type.Boolean(),
  docker_login_repo: Type.String(),
  docker_login_user: Type.String(),
  docker_login_pass: Type.String({ description: 'Shown only to the owner; empty for everyone else.' }),
  href: Type.String(),
  repo: Type.String(),
  extra_filters: Type.Record(Type.String(), Type.Unknown()),
  recommended_disk_space: Type.Number(),
  private: Type.Boolean(),
  volume_info: Nullable(Type.Record(Type.String(), Type.Unknown())),
  creator_id: Type.Integer(),
  created_at: Type.Number(),
  count_created: Type.Integer(),
  default_tag: Type.String(),
  recent_create_date: Nullable(Type.Number()),
  recommended: Type.Boolean(),
});
export type TemplateObject = Static<typeof TemplateObject>;

export const TemplateReply = Type.Object({ success: Type.Boolean(), template: TemplateObject });
export const TemplatesReply = Type.Object({ success: Type.Boolean(), templates: Type.Array(TemplateObject) });
export const DeleteTemplateReply = Type.Object({ success: Type.Boolean(), msg: Type.String() });

/**
 * `GET /api/v0/users/{id}/templates/`: whose templates, as the clients name the caller: `0` (vast.py's form), `me`,
 * `current`, or the caller's own user id.
 */
export const UserTemplatesParams = Type.Object({
  id: Type.String({ pattern: '^(me|current|0|[1-9][0-9]{0,14})$', description: 'your user id, or 0, me or current for yourself' }),
});
