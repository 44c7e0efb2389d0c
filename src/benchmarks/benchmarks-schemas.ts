import { Type } from 'typebox';
import { Id } from '../platform/schemas.js';

const NStr = Type.Union([Type.String(), Type.Null()]);
const NInt = Type.Union([Type.Integer(), Type.Null()]);

/** A result as `search benchmarks` prints it (docs/spec/client-compat-more.md §a "Benchmarks"). */
export const BenchmarkObject = Type.Object({
  id: Type.Integer(),
  machine_id: Type.Integer(),
  gpu_name: Type.String(),
  num_gpus: Type.Integer(),
  value: Type.Number(),
  type: Type.String(),
  template_hash: NStr,
  template_id: NInt,
  contract_id: NInt,
  image: NStr,
  launch_args: NStr,
  last_update: Type.Number({ description: 'epoch s' }),
});

/** A bare list, as the clients read it. */
export const BenchmarksReply = Type.Array(BenchmarkObject);

/** The query values arrive JSON-encoded (docs/spec/client-compat-more.md "Everywhere"). */
export const BenchmarksQuery = Type.Object(
  {
    select_cols: Type.Optional(Type.String({ maxLength: 4096, description: 'JSON list; only ["*"]' })),
    select_filters: Type.Optional(Type.String({ maxLength: 65536, description: 'JSON object of {field: {op: value}}' })),
    order_by: Type.Optional(Type.String({ maxLength: 4096, description: 'JSON list of {col, dir}' })),
    limit: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  { additionalProperties: true },
);

/** `POST /_emu/benchmarks`: records a result, as a run of a benchmark on a machine would. */
export const EmuBenchmarkBody = Type.Object(
  {
    machine_id: Id(),
    value: Type.Number(),
    type: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    num_gpus: Type.Optional(Type.Integer({ minimum: 1, maximum: 64 })),
    template_hash: Type.Optional(Type.String({ maxLength: 128 })),
    template_id: Type.Optional(Id()),
    contract_id: Type.Optional(Id()),
    image: Type.Optional(Type.String({ maxLength: 512 })),
    launch_args: Type.Optional(Type.String({ maxLength: 4096 })),
    last_update: Type.Optional(Type.Number({ minimum: 0 })),
  },
  { additionalProperties: false },
);

export const EmuBenchmarkReply = Type.Object({ success: Type.Literal(true), id: Type.Integer() });
