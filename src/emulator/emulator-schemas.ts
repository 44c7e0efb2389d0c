/**
 * TypeBox schemas of the emulator control API (contract §2), exported so the SDK takes its request and reply types
 * from what the server validates (`import type` + `Static<>`).
 */
import { Type, type Static } from 'typebox';
import { Id } from '../platform/schemas.js';
import { UserObject } from '../users/users-types.js';
import { MAX_GPUS_PER_MACHINE } from '../machines/machines-types.js';

/** Longest single clock advance: ten years, in seconds. */
const MAX_ADVANCE_S = 10 * 365 * 86400;

export const NowReply = Type.Object({ now: Type.Number({ description: 'Unix seconds' }) });

export const AdvanceBody = Type.Object({ seconds: Type.Number({ exclusiveMinimum: 0, maximum: MAX_ADVANCE_S }) });

export const EmuUserBody = Type.Object({
  email: Type.String({ minLength: 3, maxLength: 254, pattern: '^[^\\s@]+@[^\\s@]+$' }),
  password: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
  full_name: Type.Optional(Type.String({ maxLength: 200 })),
  email_verified: Type.Optional(Type.Boolean({ default: true })),
  is_admin: Type.Optional(Type.Boolean({ default: false })),
  credit: Type.Optional(Type.Number({ minimum: 0, maximum: 1e9, default: 100 })),
  phone_number: Type.Optional(Type.String({ pattern: '^\\+[1-9]\\d{6,14}$' })),
  legacy_tfa: Type.Optional(Type.Boolean({ default: false })),
});

export const EmuUserReply = Type.Object({ user: UserObject, api_key: Type.String() });

export const OutboxQuery = Type.Object({
  to: Type.Optional(Type.String()),
  channel: Type.Optional(Type.Union([Type.Literal('email'), Type.Literal('sms')])),
});

export const OutboxReply = Type.Object({
  messages: Type.Array(
    Type.Object({
      id: Type.Integer(),
      channel: Type.String(),
      to: Type.String(),
      code: Type.Union([Type.String(), Type.Null()]),
      text: Type.String(),
      sent_at: Type.Number(),
    }),
  ),
});

export const FaultBody = Type.Object({
  fault: Type.String({ minLength: 1, maxLength: 64 }),
  instance_id: Type.Optional(Id()),
  machine_id: Type.Optional(Id()),
  count: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
});

export const FaultReply = Type.Object({ success: Type.Boolean() }, { additionalProperties: true });

export const ResetReply = Type.Object({ success: Type.Boolean() });

const num = (min: number, max: number) => Type.Optional(Type.Number({ minimum: min, maximum: max }));
const int = (min: number, max: number) => Type.Optional(Type.Integer({ minimum: min, maximum: max }));
const str = (max = 200) => Type.Optional(Type.String({ minLength: 1, maxLength: max }));
const bool = () => Type.Optional(Type.Boolean());

/** Contract §2: offer field names for the machine's properties, plus its host's prices. Omitted: catalogue defaults. */
export const NewMachineBody = Type.Object(
  {
    gpu_name: str(64),
    num_gpus: int(1, MAX_GPUS_PER_MACHINE),
    gpu_ram: num(1, 1_048_576),
    gpu_mem_bw: num(0, 100_000),
    gpu_max_power: num(0, 10_000),
    gpu_max_temp: num(0, 200),
    gpu_display_active: bool(),
    compute_cap: int(0, 10_000),
    bw_nvlink: num(0, 100_000),
    pci_gen: num(1, 10),
    pcie_bw: num(0, 1000),
    cpu_name: str(),
    cpu_arch: str(32),
    cpu_cores: int(1, 4096),
    cpu_ghz: num(0, 10),
    cpu_ram: num(1, 1e8),
    has_avx: bool(),
    mobo_name: str(),
    disk_space: num(1, 1e7),
    disk_bw: num(0, 1e6),
    inet_up: num(0, 1e6),
    inet_down: num(0, 1e6),
    driver_version: Type.Optional(Type.String({ pattern: '^\\d{1,3}\\.\\d{1,3}(\\.\\d{1,3})?$' })),
    cuda_max_good: num(0, 100),
    ubuntu_version: str(16),
    reliability: num(0, 1),
    verified: bool(),
    geolocation: str(100),
    datacenter: bool(),
    static_ip: bool(),
    external: bool(),
    cluster_id: Type.Optional(Type.Union([Type.Integer({ minimum: 1 }), Type.Null()])),
    direct_port_count: int(0, 10_000),
    vms_enabled: bool(),
    public_ipaddr: Type.Optional(Type.String({ pattern: '^\\d{1,3}(\\.\\d{1,3}){3}$' })),
    duration: num(1, 10 * 365 * 86_400),
    price_gpu: num(0, 1000),
    price_disk: num(0, 1000),
    price_inetu: num(0, 1000),
    price_inetd: num(0, 1000),
    min_bid: num(0, 1000),
    /** The user who hosts the machine (a host is a user); omitted: a simulated host of its own. */
    owner_user_id: Type.Optional(Type.Integer({ minimum: 1 })),
    /** False: not listed until its host lists it (as after registration by the agent). Default true. */
    listed: bool(),
  },
  { additionalProperties: false },
);
export type NewMachineInput = Static<typeof NewMachineBody>;

/** Reply of `POST /_emu/machines`: the new machine and the offers it lists. */
export const NewMachineReply = Type.Object({ machine_id: Type.Integer(), offer_ids: Type.Array(Type.Integer()) });

/** Catalogue defaults of `POST /_emu/machines` for what the body leaves out. */
export const EMU_MACHINE_DEFAULTS = {
  gpu_name: 'RTX 4090',
  num_gpus: 1,
  reliability: 0.99,
  verified: true,
  direct_port_count: 100,
  /** Listed for 30 days. */
  duration: 30 * 86_400,
  /** min_bid as a fraction of price_gpu. */
  min_bid_ratio: 0.5,
  price_disk: 0.15,
  price_inet: 0.01,
} as const;
