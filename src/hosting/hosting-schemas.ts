/**
 * TypeBox schemas of the host side of the API (client-compat-more.md §a), exported so the SDK takes its types from
 * what the server validates. Query values arrive JSON-encoded (`machine_ids=[5, 6]`, `machid=null`, `sday=19723.0`):
 * they are strings here and parsed by the service.
 */
import { Type, type Static } from 'typebox';
import { MachineGpuFields } from './hosting-gpu-schemas.js';
import { Id } from '../platform/schemas.js';

const price = (description: string) => Type.Optional(Type.Union([Type.Number({ minimum: 0, maximum: 1000, description }), Type.Null()]));
const nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Optional(Type.Union([t, Type.Null()]));

export const MachineIdParams = Type.Object({ id: Id({ description: 'machine id' }) });

/** `owner=me` (the vastai client; the default) or `owner=all` (admins: every host's machines). */
export const MachinesQuery = Type.Object({ owner: Type.Optional(Type.String({ maxLength: 16 })) }, { additionalProperties: true });

/** A maintenance window as `show maints` prints it: epoch seconds, hours. */
export const MaintenanceWindow = Type.Object({
  machine_id: Type.Integer(),
  start_time: Type.Number(),
  end_time: Type.Number(),
  duration_hours: Type.Number(),
  maintenance_category: Type.String(),
});

/** A machine as its host sees it (the client's `machine_fields`, plus the listing). Prices in $ (per GPU per hour, per GB). */
export const MachineRow = Type.Object({
  id: Type.Integer(),
  host_id: Type.Integer(),
  num_gpus: Type.Integer(),
  gpu_name: Type.String(),
  disk_space: Type.Number(),
  hostname: Type.String(),
  driver_version: Type.String(),
  reliability2: Type.Number(),
  verification: Type.String(),
  public_ipaddr: Type.String(),
  geolocation: Type.Union([Type.String(), Type.Null()]),
  num_reports: Type.Integer(),
  listed: Type.Boolean(),
  rentable: Type.Boolean(),
  online: Type.Boolean(),
  listed_gpu_cost: Type.Number(),
  min_bid_price: Type.Number(),
  credit_discount_max: Type.Number(),
  listed_storage_cost: Type.Number(),
  listed_inet_up_cost: Type.Number(),
  listed_inet_down_cost: Type.Number(),
  min_chunk: Type.Integer(),
  end_date: Type.Number(),
  listing_duration: Type.Union([Type.Number(), Type.Null()]),
  gpu_occupancy: Type.String({ description: 'one letter per GPU: D rented on demand, I interruptible (bid), x idle' }),
  current_rentals_running: Type.Integer(),
  maintenance: Type.Array(MaintenanceWindow),
  has_defjob: Type.Boolean(),
  disk_limit: Type.Union([Type.Boolean(), Type.Null()], {
    description: 'whether each container\'s disk is limited to its ask\'s disk (false: the host runs without a quota, --allow-unlimited-disk); null: not reported',
  }),
  // Issue 33 (telemetry): the GPUs as the host's agent last sampled them (hosting-gpu-view.ts).
  ...MachineGpuFields,
});

export const MachinesReply = Type.Object({ machines: Type.Array(MachineRow) });
/** `show machine` reads a list of one row. */
export const MachineReply = Type.Array(MachineRow);

export const MaintenancesQuery = Type.Object(
  { owner: Type.Optional(Type.String({ maxLength: 16 })), machine_ids: Type.Optional(Type.String({ maxLength: 10_000, description: 'JSON list of machine ids, e.g. [5, 6]' })) },
  { additionalProperties: true },
);
export const MaintenancesReply = Type.Array(MaintenanceWindow);

/** `PUT /machines/create_asks/`: vastai sends every key, null when not given (client-compat-more.md). */
export const CreateAsksBody = Type.Object(
  {
    machine: Id({ description: 'machine id' }),
    price_gpu: price('$/GPU/hour on demand'),
    price_disk: price('$/GB/month'),
    price_inetu: price('$/GB uploaded'),
    price_inetd: price('$/GB downloaded'),
    price_min_bid: price('interruptible floor, $/GPU/hour'),
    min_chunk: nullable(Type.Integer({ minimum: 1, maximum: 64, description: 'smallest bundle offered, GPUs' })),
    end_date: nullable(Type.Number({ minimum: 0, maximum: 1e11, description: 'epoch seconds; the listing ends then' })),
    credit_discount_max: nullable(Type.Number({ minimum: 0, maximum: 1, description: 'largest prepay discount, fraction' })),
    duration: nullable(Type.Union([Type.String({ maxLength: 64 }), Type.Number({ minimum: 0 })], { description: 'e.g. "3 months", "2 weeks", "86400" (seconds)' })),
    vol_size: nullable(Type.Integer({ minimum: 0, maximum: 1e8, description: 'GB offered as volumes on this machine in all (never more than its free disk); null: half its free disk; 0: no volume offer' })),
    vol_price: price('$/GB/month of the volume offer; null: price_disk. Not with vol_size 0'),
  },
  { additionalProperties: false },
);
export type CreateAsksInput = Static<typeof CreateAsksBody>;
export const CreateAsksReply = Type.Object({ success: Type.Boolean(), msg: Type.String(), extended: Type.Integer(), end_date: Type.Number() });

export const OkReply = Type.Object({ success: Type.Boolean(), msg: Type.String() });

export const EmptyBody = Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()]);

export const MinBidBody = Type.Object(
  { client_id: Type.Optional(Type.Union([Type.String({ maxLength: 32 }), Type.Integer()])), price: nullable(Type.Number({ minimum: 0, maximum: 1000 })) },
  { additionalProperties: false },
);

export const DefJobBody = Type.Object(
  {
    machine: Id({ description: 'machine id' }),
    price_gpu: price('$/GPU/hour'),
    price_inetu: price('$/GB'),
    price_inetd: price('$/GB'),
    image: Type.String({ minLength: 1, maxLength: 512 }),
    args: nullable(Type.Array(Type.String({ maxLength: 4096 }), { maxItems: 256 })),
  },
  { additionalProperties: false },
);
export type DefJobInput = Static<typeof DefJobBody>;

export const MaintBody = Type.Object(
  {
    client_id: Type.Optional(Type.Union([Type.String({ maxLength: 32 }), Type.Integer()])),
    sdate: Type.Number({ minimum: 0, maximum: 1e11, description: 'start, epoch seconds' }),
    duration: Type.Number({ exclusiveMinimum: 0, maximum: 24 * 365, description: 'hours' }),
    maintenance_category: nullable(Type.String({ maxLength: 64 })),
  },
  { additionalProperties: false },
);
export type MaintInput = Static<typeof MaintBody>;

export const CancelMaintBody = Type.Object(
  { client_id: Type.Optional(Type.Union([Type.String({ maxLength: 32 }), Type.Integer()])), machine_id: Type.Optional(Type.Integer()) },
  { additionalProperties: false },
);

export const CleanupReply = Type.Object({ success: Type.Boolean(), msg: Type.String(), deleted: Type.Integer() });

export const ReportsReply = Type.Array(Type.Object({}, { additionalProperties: true }));

export const DefragBody = Type.Object({ machine_ids: Type.Array(Id(), { minItems: 1, maxItems: 1000 }) }, { additionalProperties: false });
export const DefragReply = Type.Object({ success: Type.Boolean(), msg: Type.String(), machine_ids: Type.Array(Type.Integer()), moved: Type.Integer() });

export const EarningsQuery = Type.Object(
  {
    owner: Type.Optional(Type.String({ maxLength: 16 })),
    sday: Type.Optional(Type.String({ maxLength: 32, description: 'days since 1970-01-01 (float)' })),
    eday: Type.Optional(Type.String({ maxLength: 32 })),
    machid: Type.Optional(Type.String({ maxLength: 32, description: 'a machine id, or null' })),
  },
  { additionalProperties: true },
);

/** Dollars: what renters paid for GPUs, storage and bandwidth, their sum, the platform's fee, and the host's share. */
const money = { gpu_earn: Type.Number(), sto_earn: Type.Number(), bw_earn: Type.Number(), gross: Type.Number(), fee: Type.Number(), earn: Type.Number() };
const Money = Type.Object(money);
export const EarningsReply = Type.Object({
  success: Type.Boolean(),
  sday: Type.Integer(),
  eday: Type.Integer(),
  service_fee: Type.Number({ description: 'fraction of what renters paid that the platform keeps' }),
  summary: Money,
  per_machine: Type.Array(Type.Object({ machine_id: Type.Integer(), ...money })),
  per_day: Type.Array(Type.Object({ day: Type.Integer({ description: 'days since 1970-01-01' }), ...money })),
});
