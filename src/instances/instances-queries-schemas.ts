import { Type } from 'typebox';
import { Id } from '../platform/schemas.js';

const NullableStr = Type.Union([Type.String(), Type.Null()]);

/** `GET /api/v0/instances/filters/`: one object per distinct combination among the caller's instances. */
export const InstanceFiltersReply = Type.Object({
  success: Type.Literal(true),
  filters: Type.Array(Type.Object({ actual_status: NullableStr, verification: NullableStr, gpu_name: NullableStr })),
});

/** `POST /api/v0/contracts/fetch/`: `label` and/or `contract_ids` (instance ids); the SDK sends only what it is given. */
export const FetchContractsBody = Type.Object(
  {
    label: Type.Optional(Type.String({ maxLength: 1024 })),
    contract_ids: Type.Optional(Type.Array(Id(), { maxItems: 10_000 })),
  },
  { additionalProperties: false },
);

export const ContractObject = Type.Object({
  id: Type.Integer(),
  label: NullableStr,
  machine_id: Type.Union([Type.Integer(), Type.Null()]),
  num_gpus: Type.Integer(),
  gpu_name: NullableStr,
  actual_status: Type.Union([Type.String({ description: '`destroyed` once destroyed' }), Type.Null()]),
  start_date: Type.Number({ description: 'created, epoch s' }),
  end_date: Type.Union([Type.Number({ description: 'destroyed, epoch s' }), Type.Null()]),
});

export const FetchContractsReply = Type.Object({ success: Type.Literal(true), contracts: Type.Array(ContractObject) });
