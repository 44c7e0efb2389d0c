import { Type } from 'typebox';

const Int = Type.Integer();
const Num = Type.Number();
const Str = Type.String();
const Bool = Type.Boolean();

/**
 * An offer as search shows it (client-compat.md: the fields the vastai client prints and filters on), in the order
 * machines-offers-contract.ts offerJson writes them; offerJson's return type is this schema's, so the two cannot drift.
 * Prices are $/hour except storage_cost ($/GB/month) and inet_*_cost ($/GB).
 */
export const OfferObject = Type.Object(
  {
    id: Int, ask_contract_id: Int, machine_id: Int, host_id: Int, num_gpus: Int,
    gpu_name: Str, gpu_ram: Type.Number({ description: 'MB' }), gpu_total_ram: Type.Number({ description: 'MB' }), gpu_frac: Num,
    gpu_mem_bw: Num, gpu_max_power: Num, gpu_max_temp: Num, gpu_arch: Str, gpu_display_active: Bool, compute_cap: Num,
    total_flops: Num, dlperf: Num, dlperf_per_dphtotal: Num, flops_per_dphtotal: Num, score: Num,
    bw_nvlink: Num, pci_gen: Num, pcie_bw: Num,
    cpu_name: Str, cpu_arch: Str, cpu_cores: Num, cpu_cores_effective: Num, cpu_ghz: Num, cpu_ram: Type.Number({ description: 'MB' }),
    has_avx: Bool, mobo_name: Str, disk_space: Type.Number({ description: 'GB' }), disk_bw: Num, disk_name: Str,
    inet_up: Num, inet_down: Num, inet_up_cost: Num, inet_down_cost: Num,
    driver_version: Type.String({ description: 'e.g. 535.86.05' }), cuda_max_good: Num, ubuntu_version: Str,
    reliability: Num, reliability2: Num, geolocation: Str, datacenter: Bool, hosting_type: Int, static_ip: Bool, external: Bool,
    cluster_id: Type.Union([Int, Type.Null()]), verification: Str, verified: Bool, rentable: Bool, rented: Bool, is_bid: Bool,
    direct_port_count: Int, public_ipaddr: Str, vms_enabled: Bool,
    min_bid: Num, dph_base: Num, dph_total: Num, discounted_dph_total: Num, storage_cost: Num, storage_total_cost: Num,
    allocated_storage: Type.Number({ description: 'GB priced into dph_total' }), duration: Type.Number({ description: 'seconds' }),
    end_date: Num, bundle_id: Int,
  },
  { additionalProperties: true },
);

/** `POST /api/v0/bundles/` (and the older GET form). */
export const OffersReply = Type.Object({ offers: Type.Array(OfferObject) });

/** `GET /api/v0/bundles/?q=<json>`: the filter object as a JSON string. */
export const BundlesQuery = Type.Object({ q: Type.Optional(Type.String({ maxLength: 65536 })) }, { additionalProperties: true });

/** `PUT /api/v0/search/asks/` (`search offers --new`): `q` is the `POST /bundles/` filter object. */
export const SearchAsksBody = Type.Object(
  {
    select_cols: Type.Optional(Type.Unknown({ description: 'only ["*"]' })),
    q: Type.Optional(Type.Unknown({ description: 'the POST /api/v0/bundles/ filter object' })),
  },
  { additionalProperties: false },
);
