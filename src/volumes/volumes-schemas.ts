/**
 * TypeBox schemas of the volume routes (contract §3), exported so the SDK takes its request and reply types from what
 * the server validates (`import type` + `Static<>`). The services' objects have these schemas' types.
 */
import { Type } from 'typebox';

const Int = Type.Integer();
const Num = Type.Number();
const Str = Type.String();
const Bool = Type.Boolean();
const orNull = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

/** A volume offer (volume-offers.ts volumeOfferJson): the fields the vastai client prints for `search volumes`. */
export const VolumeOfferObject = Type.Object(
  {
    id: Int, ask_contract_id: Int, machine_id: Int, host_id: Int,
    disk_space: Type.Number({ description: 'GB free' }), disk_bw: Num, disk_name: Str,
    storage_cost: Type.Number({ description: '$/GB/month' }), storage_total_cost: Type.Number({ description: '$/hour for allocated_storage' }),
    allocated_storage: Num, cpu_arch: Str, cpu_ghz: Num, cuda_max_good: Num, driver_version: Str, gpu_arch: Str, gpu_name: Str,
    has_avx: Bool, pci_gen: Num, pcie_bw: Num, total_flops: Num, ubuntu_version: Str, inet_up: Num, inet_down: Num,
    reliability: Num, reliability2: Num, geolocation: Str, datacenter: Bool, static_ip: Bool, external: Bool,
    cluster_id: orNull(Int), verification: Str, verified: Bool, rentable: Bool, duration: Num, end_date: Num, score: Num,
  },
  { additionalProperties: true },
);
export const VolumeSearchReply = Type.Object({ offers: Type.Array(VolumeOfferObject) });

/** A volume (`show volumes`): the fields the vastai client prints, plus size and price. */
export const VolumeObject = Type.Object(
  {
    id: Int, name: orNull(Str), label: orNull(Str), cluster_id: orNull(Int), machine_id: Int, host_id: Int,
    disk_space: Type.Number({ description: 'GB' }), size: Type.Number({ description: 'GB' }),
    status: Type.Union([Type.Literal('in_use'), Type.Literal('ready')]), instances: Type.Array(Int),
    storage_cost: Num, dph_total: Num, disk_name: orNull(Str), driver_version: orNull(Str), inet_up: Num, inet_down: Num,
    reliability2: Num, geolocation: orNull(Str), verification: orNull(Str), start_date: Num, duration: Num,
  },
  { additionalProperties: true },
);

/** Longest volume name (`PUT /volumes/`, and `volume_info.name` of an instance creation). */
export const MAX_VOLUME_NAME_CHARS = 128;
/**
 * `PUT /volumes/`: open; vastai sends `{size, id, name?}` where `id` is the volume offer (declared, so not refused as
 * a column). Owner and system columns (`user_id` …) are 400s (platform/validation.ts).
 */
export const CreateVolumeBody = Type.Object(
  {
    id: Type.Integer({ minimum: 1, description: 'volume offer id (from search volumes)' }),
    size: Type.Number({ exclusiveMinimum: 0, maximum: 1e7, description: 'GB' }),
    name: Type.Optional(Type.Union([Type.String({ maxLength: MAX_VOLUME_NAME_CHARS }), Type.Null()])),
  },
  { additionalProperties: true },
);
export const CreateVolumeReply = Type.Object({ success: Type.Boolean(), volume_id: Type.Integer(), id: Type.Integer(), msg: Type.String() });

// The client sends owner=me and type=all|local|network; every volume here is local.
export const ListVolumesQuery = Type.Object({}, { additionalProperties: true });
export const VolumesReply = Type.Object({ success: Type.Boolean(), volumes: Type.Array(VolumeObject) });

/** `unlist volume ID` (`POST /api/v0/volumes/unlist`): the volume offer's id. */
export const UnlistVolumeBody = Type.Object({ id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'volume offer id' }) }, { additionalProperties: false });
export const UnlistVolumeReply = Type.Object({ success: Type.Literal(true), msg: Type.String() });

export const DeleteVolumeQuery = Type.Object({ id: Type.Optional(Type.Integer({ minimum: 1 })) }, { additionalProperties: true });
export const DeleteVolumeReply = Type.Object({ success: Type.Boolean(), msg: Type.String() });

/**
 * `vastai list volume ID [-s SIZE] [-p PRICE] [-e END]` and `list volumes ID...` (`POST /api/v0/volumes/`): the host
 * offers SIZE GB of the machine's disk as volumes at PRICE $/GB/month, as `list machine -v SIZE -z PRICE` does.
 */
export const ListVolumeOfferBody = Type.Object(
  {
    machine: Type.Union([Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }), Type.Array(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }), { minItems: 1, maxItems: 1000 })], { description: 'machine id, or a list (list volumes)' }),
    size: Type.Integer({ minimum: 0, maximum: 1e8, description: 'GB offered for volumes in all (0: none)' }),
    price_disk: Type.Number({ minimum: 0, maximum: 1000, description: '$/GB/month' }),
    end_date: Type.Optional(Type.Union([Type.Number({ minimum: 0, maximum: 1e11 }), Type.Null()], { description: 'not kept: the offer lasts as the machine\'s listing' })),
  },
  { additionalProperties: false },
);
export const ListVolumeOfferReply = Type.Object({ success: Type.Literal(true), msg: Type.String() });
