/**
 * Every offer field a search may filter or order on, with its type (client-compat.md: the fields the vastai client
 * prints and the ones users filter on). Derived fields are computed from the search (type, allocated_storage) and
 * the clock, exactly as offerJson shows them.
 */
import {
  dlperfOf,
  dphTotal,
  gpuPriceMicro,
  hourlyPrice,
  isRentable,
  scoreOf,
  storageHourly,
  totalFlopsOf,
  type OfferContext,
  type OfferEntry,
  UNRENTABLE_FAULTS,
  MAX_MAINT_WINDOWS,
} from '../machines/machines-offers-contract.js';
import type { FieldDef, FieldDoc, FieldRange, FieldTable, FieldType } from './filter.js';
import { countryCode, countryOf, regionCountries } from './offer-geo.js';
import { diskHourly, toDollars } from '../platform/money.js';

type Def = FieldDef<OfferEntry, OfferContext>;
// Fields are static (depend on the offer alone, cached as columns) unless wrapped in `dyn` (they depend on the
// search's type, storage or the clock).
// A field with a `doc` is one the CLI's query language takes (src/cli/offer-query.ts derives its field table, units and
// help from this one; the console's search form goes through that parser); the others are for raw API callers.
const f = (type: FieldType, get: Def['get'], normalize?: (s: string) => string, doc?: FieldDoc): Def => ({ type, get, normalize, static: true, doc });
const dyn = (d: Def): Def => ({ ...d, static: false });
const num = (get: (o: OfferEntry, c: OfferContext) => number | null, doc?: FieldDoc) => f('number', get, undefined, doc);
const int = (get: (o: OfferEntry, c: OfferContext) => number | null, doc?: FieldDoc) => f('integer', get, undefined, doc);
const bool = (get: (o: OfferEntry, c: OfferContext) => boolean, doc?: FieldDoc) => f('boolean', get, undefined, doc);
const str = (get: (o: OfferEntry) => string, doc?: FieldDoc) => f('string', get, undefined, doc);
const frac = (o: OfferEntry) => o.num_gpus / o.machine.num_gpus;

/** GPU names compare with `_` read as a space (the CLI's `RTX_4090`) and without regard to case. */
export const normalizeGpuName = (s: string) => s.replace(/_/g, ' ').trim().toLowerCase();
const gpuNameKeys = new WeakMap<object, string>();
const gpuNameKey = (o: OfferEntry) => {
  let k = gpuNameKeys.get(o.machine);
  if (k === undefined) gpuNameKeys.set(o.machine, (k = normalizeGpuName(o.machine.gpu_name)));
  return k;
};

/**
 * The values numeric offer fields take (issue 29 item 5): a filter no such value passes (`reliability>99`) is a 400
 * naming the field and this, not an empty list. The spec's fields table: reliability is a fraction; the rest are
 * counts, sizes and prices, never negative. Shared with the CLI, which checks them before sending.
 */
const FRACTION: FieldRange = { min: 0, max: 1, what: 'a fraction from 0 to 1 (0.99 is 99 %)' };
const NOT_NEGATIVE: FieldRange = { min: 0, max: Number.POSITIVE_INFINITY, what: 'never negative' };
export const OFFER_FIELD_RANGES: Readonly<Record<string, FieldRange>> = {
  reliability: FRACTION,
  reliability2: FRACTION,
  gpu_frac: FRACTION,
  num_gpus: { min: 1, max: Number.POSITIVE_INFINITY, what: 'a number of GPUs, at least 1' },
  ...Object.fromEntries(
    ['gpu_ram', 'gpu_total_ram', 'cpu_ram', 'cpu_cores', 'cpu_cores_effective', 'disk_space', 'direct_port_count', 'dph_total', 'dph_base']
      .map((k) => [k, NOT_NEGATIVE]),
  ),
};

/**
 * geolocation (`"California, US"`): a two-letter code matches the country part, a region name its countries
 * (offer-geo.ts); codes compare in upper case, as offers write them.
 */
export const GEOLOCATION_MATCHING = {
  normalize: (s: string) => countryCode(s) ?? s,
  alt: countryOf,
  expand: regionCountries,
} as const satisfies Partial<FieldDef<unknown, unknown>>;
const geolocation = (get: (o: OfferEntry) => string, doc?: FieldDoc): Def => ({ ...str(get, doc), ...GEOLOCATION_MATCHING });

const FIELDS: FieldTable<OfferEntry, OfferContext> = {
  id: int((o) => o.id, { desc: 'offer id' }),
  ask_contract_id: int((o) => o.id),
  bundle_id: int((o) => o.id),
  machine_id: int((o) => o.machine.id, { desc: 'machine id' }),
  host_id: int((o) => o.machine.host_id, { desc: 'host id' }),
  num_gpus: int((o) => o.num_gpus, { desc: 'number of GPUs' }),
  gpu_name: f('string', gpuNameKey, normalizeGpuName, { desc: 'GPU model; write spaces as _ (RTX_4090)' }),
  gpu_ram: num((o) => o.machine.spec.gpu_ram, { unit: 'GB', desc: 'RAM per GPU (sent in MB)' }),
  gpu_total_ram: num((o) => o.machine.spec.gpu_ram * o.num_gpus, { unit: 'GB', desc: 'total GPU RAM (sent in MB)' }),
  gpu_frac: num(frac, { desc: 'share of the machine’s GPUs in the offer' }),
  gpu_mem_bw: num((o) => o.machine.spec.gpu_mem_bw, { unit: 'GB/s', desc: 'GPU memory bandwidth' }),
  gpu_max_power: num((o) => o.machine.spec.gpu_max_power, { unit: 'W', desc: 'GPU power limit' }),
  gpu_max_temp: num((o) => o.machine.spec.gpu_max_temp, { unit: '°C', desc: 'GPU temperature limit' }),
  gpu_arch: str((o) => o.machine.spec.gpu_arch, { desc: 'GPU architecture (nvidia, amd)' }),
  gpu_display_active: bool((o) => o.machine.spec.gpu_display_active, { desc: 'a display is attached (alias display_active)' }),
  compute_cap: int((o) => o.machine.spec.compute_cap, { desc: 'CUDA compute capability × 100 (650 for 6.5)' }),
  total_flops: num(totalFlopsOf, { unit: 'TFLOPS', desc: 'TFLOPS of all GPUs' }),
  dlperf: num(dlperfOf, { desc: 'DL-perf score' }),
  dlperf_per_dphtotal: dyn(num((o, c) => dlperfOf(o) / dphTotal(o, c), { desc: 'DL-perf per $/hr (alias dlperf_usd)' })),
  flops_per_dphtotal: dyn(num((o, c) => totalFlopsOf(o) / dphTotal(o, c), { desc: 'TFLOPS per $/hr (alias flops_usd)' })),
  score: dyn(num(scoreOf, { desc: 'ranking score' })),
  bw_nvlink: num((o) => o.machine.spec.bw_nvlink, { unit: 'GB/s', desc: 'NVLink bandwidth' }),
  pci_gen: num((o) => o.machine.spec.pci_gen, { desc: 'PCIe generation' }),
  pcie_bw: num((o) => o.machine.spec.pcie_bw, { unit: 'GB/s', desc: 'PCIe bandwidth, CPU to GPU' }),
  cpu_name: str((o) => o.machine.spec.cpu_name),
  cpu_arch: str((o) => o.machine.spec.cpu_arch, { desc: 'host CPU architecture (amd64, arm64)' }),
  cpu_cores: int((o) => o.machine.spec.cpu_cores, { desc: 'virtual CPUs of the host' }),
  cpu_cores_effective: num((o) => o.machine.spec.cpu_cores * frac(o), { desc: 'virtual CPUs you get' }),
  cpu_ghz: num((o) => o.machine.spec.cpu_ghz, { unit: 'GHz', desc: 'CPU clock speed' }),
  cpu_ram: num((o) => Math.round(o.machine.spec.cpu_ram * frac(o)), { unit: 'GB', desc: 'system RAM (sent in MB)' }),
  has_avx: bool((o) => o.machine.spec.has_avx, { desc: 'CPU supports AVX' }),
  mobo_name: str((o) => o.machine.spec.mobo_name, { desc: 'motherboard' }),
  disk_space: num((o) => o.machine.spec.disk_space * frac(o), { unit: 'GB', desc: 'disk space' }),
  disk_bw: num((o) => o.machine.spec.disk_bw, { unit: 'MB/s', desc: 'disk read bandwidth' }),
  disk_name: str((o) => o.machine.spec.disk_name),
  inet_up: num((o) => o.machine.spec.inet_up, { unit: 'Mb/s', desc: 'upload speed' }),
  inet_down: num((o) => o.machine.spec.inet_down, { unit: 'Mb/s', desc: 'download speed' }),
  inet_up_cost: num((o) => toDollars(o.machine.price_inetu_micro), { unit: '$/GB', desc: 'upload price' }),
  inet_down_cost: num((o) => toDollars(o.machine.price_inetd_micro), { unit: '$/GB', desc: 'download price' }),
  driver_version: f('version', (o) => o.machine.driver_code, undefined, { desc: 'driver version, e.g. 535.86.05 (sent as 535086005)' }),
  cuda_max_good: num((o) => o.machine.spec.cuda_max_good, { desc: 'highest CUDA version the driver supports (alias cuda_vers)' }),
  ubuntu_version: str((o) => o.machine.spec.ubuntu_version, { desc: 'host Ubuntu version' }),
  reliability: num((o) => o.machine.spec.reliability, { desc: 'machine reliability, 0 to 1' }),
  reliability2: num((o) => o.machine.spec.reliability),
  geolocation: geolocation((o) => o.machine.spec.geolocation, { desc: 'two-letter country code (US), or a region: North_America, South_America, Europe, Asia, Oceania, Africa' }),
  datacenter: bool((o) => o.machine.spec.datacenter, { desc: 'only datacenter offers' }),
  hosting_type: int((o) => (o.machine.spec.datacenter ? 1 : 0)),
  static_ip: bool((o) => o.machine.spec.static_ip, { desc: 'static IP address' }),
  external: bool((o) => o.machine.spec.external, { desc: 'include external offers' }),
  cluster_id: int((o) => o.machine.spec.cluster_id, { desc: 'cluster the machine belongs to' }),
  verification: str((o) => o.machine.verification, { desc: 'verification state (verified, unverified …)' }),
  verified: bool((o) => o.machine.verification === 'verified', { desc: 'host is verified' }),
  rentable: dyn(bool((o, c) => isRentable(o.machine, c.now), { desc: 'can be rented now' })),
  rented: bool((o) => o.rented, { desc: 'already rented (any: include conflicts)' }),
  is_bid: dyn(bool((_o, c) => c.type === 'bid')),
  direct_port_count: int((o) => o.machine.direct_port_count, { desc: 'open ports on the host' }),
  public_ipaddr: str((o) => o.machine.public_ipaddr),
  vms_enabled: bool((o) => o.machine.vms_enabled, { desc: 'VMs can run on the machine' }),
  min_bid: num((o) => toDollars(o.bid_floor_micro * o.num_gpus), { unit: '$/hr', desc: 'lowest bid for interruptible' }),
  dph_base: dyn(num((o, c) => toDollars(gpuPriceMicro(o, c.type)))),
  dph_total: dyn(num(dphTotal, { unit: '$/hr', desc: 'total price (alias dph)' })),
  discounted_dph_total: dyn(num((o, c) => dphTotal(o, c) * (1 - o.machine.spec.reserved_discount))),
  storage_cost: num((o) => toDollars(o.machine.price_disk_micro), { unit: '$/GB/month', desc: 'storage price' }),
  storage_total_cost: dyn(num((o, c) => storageHourly(o, c.storage_gb))),
  duration: dyn(num((o, c) => Math.max(0, o.machine.end_date - c.now), { unit: 'days', desc: 'longest rental (sent in seconds)' })),
  end_date: num((o) => o.machine.end_date),
};

export const OFFER_FIELDS: FieldTable<OfferEntry, OfferContext> = Object.fromEntries(
  Object.entries(FIELDS).map(([k, d]) => [k, Object.hasOwn(OFFER_FIELD_RANGES, k) ? { ...d, range: OFFER_FIELD_RANGES[k] } : d]),
);

/** Short names of the vastai query language, accepted from raw API callers too. */
/**
 * The vastai client's query units: a query gives these fields in GB and days, the filter body takes MB and seconds
 * (its parse_query multiplies them). Shared by the CLI's query parser and a workergroup's `search_params`.
 */
export const QUERY_UNIT_MULT: Readonly<Record<string, number>> = { cpu_ram: 1000, gpu_ram: 1000, gpu_total_ram: 1000, duration: 86_400 };

export const OFFER_FIELD_ALIASES: Record<string, string> = {
  cuda_vers: 'cuda_max_good',
  dph: 'dph_total',
  dlperf_usd: 'dlperf_per_dphtotal',
  flops_usd: 'flops_per_dphtotal',
  display_active: 'gpu_display_active',
};

/**
 * Per-offer parts of the search-dependent fields, kept as columns like the static fields: a search combines them
 * with the same arithmetic as machines-offers-contract.ts (same operations in the same order, so the same doubles).
 */
export const OFFER_PARTS: Record<string, (o: OfferEntry) => number> = {
  price_gpu_ondemand_micro: (o) => gpuPriceMicro(o, 'ondemand'),
  price_gpu_bid_micro: (o) => gpuPriceMicro(o, 'bid'),
  reserved_discount: (o) => o.machine.spec.reserved_discount,
  // Listed by its host and online (isRentable, machines-offers-contract.ts); the time checks are the `rentable` column's.
  fault_ok: (o) => (o.machine.listed && !UNRENTABLE_FAULTS.has(o.machine.fault ?? '') ? 1 : 0),
  maint_n: (o) => o.machine.maint.length,
  ...Object.fromEntries(
    Array.from({ length: MAX_MAINT_WINDOWS }, (_, k) => [
      [`maint${k}_start`, (o: OfferEntry) => o.machine.maint[k]?.start ?? 0],
      [`maint${k}_end`, (o: OfferEntry) => o.machine.maint[k]?.end ?? 0],
    ]).flat(),
  ),
};

/** True when slot `i` is in one of its machine's maintenance windows at `now` (the columns of OFFER_PARTS). */
function maintenanceCheck(col: ColumnOf, now: number): (i: number) => boolean {
  const n = col('maint_n');
  const starts = Array.from({ length: MAX_MAINT_WINDOWS }, (_, k) => col(`maint${k}_start`));
  const ends = Array.from({ length: MAX_MAINT_WINDOWS }, (_, k) => col(`maint${k}_end`));
  return (i) => {
    for (let k = 0; k < n[i]; k++) if (starts[k][i] <= now && now < ends[k][i]) return true;
    return false;
  };
}

/** A column by name: a static field of OFFER_FIELDS or a part of OFFER_PARTS. */
export type ColumnOf = (name: string) => Float64Array;
/**
 * Writes a field's value for the candidate at each position `j` (slot `cand[j]`) into `out[j]`. By position, not by
 * slot: the candidates are scattered over 100,000 slots, and each scattered read or write of a column costs several
 * times a sequential one (a search's computed fields and order were most of its time, written by slot).
 */
export type Fill = (cand: Int32Array, out: Float64Array) => void;
type Dynamic = (col: ColumnOf, c: OfferContext) => Fill;

// Each field has its own loop over the candidates: a loop that called a per-field function would be one
// megamorphic call site, several times slower than the arithmetic itself. The loops call dphTotal's own price
// formula (hourlyPrice: one small function at one call site per loop, which the JIT inlines) rather than filling
// dph_total first: one pass over the columns instead of two.

/** The GPU price column of the search type, and the storage part's factors, for dphTotal. */
function dphParts(col: ColumnOf, c: OfferContext) {
  return { gpu: col(c.type === 'bid' ? 'price_gpu_bid_micro' : 'price_gpu_ondemand_micro'), disk: col('storage_cost'), gb: c.storage_gb };
}

/** dphTotal over columns, for each candidate. */
function fillDph(col: ColumnOf, c: OfferContext): Fill {
  const { gpu, disk, gb } = dphParts(col, c);
  // A local: an imported binding is a property read on the module object on every row.
  const price = hourlyPrice;
  return (cand, out) => {
    for (let j = 0; j < cand.length; j++) {
      const i = cand[j];
      out[j] = price(gpu[i], disk[i], gb);
    }
  };
}

/** `value / dph_total` for a static column (dlperf, total_flops). */
function perDph(name: string): Dynamic {
  return (col, c) => {
    const v = col(name);
    const { gpu, disk, gb } = dphParts(col, c);
    const price = hourlyPrice;
    return (cand, out) => {
      for (let j = 0; j < cand.length; j++) {
        const i = cand[j];
        out[j] = v[i] / price(gpu[i], disk[i], gb);
      }
    };
  };
}

/**
 * Every field that is not static, over columns, with the same operations in the same order as machines-offers-contract.ts
 * (so the same doubles; test/offers-columns.test.ts checks each against its `get`). Booleans as 1/0.
 */
export const OFFER_DYNAMIC: Record<string, Dynamic> = {
  dlperf_per_dphtotal: perDph('dlperf'),
  flops_per_dphtotal: perDph('total_flops'),
  score: (col, c) => {
    const dl = col('dlperf');
    const rel = col('reliability');
    const { gpu, disk, gb } = dphParts(col, c);
    const price = hourlyPrice;
    return (cand, out) => {
      for (let j = 0; j < cand.length; j++) {
        const i = cand[j];
        out[j] = (dl[i] / price(gpu[i], disk[i], gb)) * rel[i];
      }
    };
  },
  rentable: (col, c) => {
    const ok = col('fault_ok');
    const end = col('end_date');
    const maintN = col('maint_n');
    const now = c.now;
    const inMaint = maintenanceCheck(col, now);
    return (cand, out) => {
      for (let j = 0; j < cand.length; j++) {
        const i = cand[j];
        out[j] = ok[i] === 1 && end[i] > now && (maintN[i] === 0 || !inMaint(i)) ? 1 : 0;
      }
    };
  },
  is_bid: (_col, c) => {
    const v = c.type === 'bid' ? 1 : 0;
    return (cand, out) => {
      out.fill(v, 0, cand.length);
    };
  },
  dph_base: (col, c) => {
    const gpu = col(c.type === 'bid' ? 'price_gpu_bid_micro' : 'price_gpu_ondemand_micro');
    const dollars = toDollars;
    return (cand, out) => {
      for (let j = 0; j < cand.length; j++) {
        const i = cand[j];
        out[j] = dollars(gpu[i]);
      }
    };
  },
  dph_total: fillDph,
  discounted_dph_total: (col, c) => {
    const disc = col('reserved_discount');
    const { gpu, disk, gb } = dphParts(col, c);
    const price = hourlyPrice;
    return (cand, out) => {
      for (let j = 0; j < cand.length; j++) {
        const i = cand[j];
        out[j] = price(gpu[i], disk[i], gb) * (1 - disc[i]);
      }
    };
  },
  storage_total_cost: (col, c) => {
    const disk = col('storage_cost');
    const gb = c.storage_gb;
    const hourly = diskHourly;
    return (cand, out) => {
      for (let j = 0; j < cand.length; j++) {
        const i = cand[j];
        out[j] = hourly(disk[i], gb);
      }
    };
  },
  duration: (col, c) => {
    const end = col('end_date');
    const now = c.now;
    return (cand, out) => {
      for (let j = 0; j < cand.length; j++) {
        const i = cand[j];
        out[j] = Math.max(0, end[i] - now);
      }
    };
  },
};
