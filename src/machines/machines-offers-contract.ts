/**
 * Offers, derived from machines and the state of their GPUs: the machines feature's public offer model. Pure
 * functions: the allocation (machines-service.ts), the in-memory offer index (machines-index.ts), the offer search
 * (src/offers/), the autoscaler's search in its transaction (src/serverless/), volume offers and the hosting view all
 * use the same ones, so what search shows is what renting does.
 *
 * A machine offers its GPUs in bundles of 1, 2, 4, 8 … GPUs (powers of two up to its size, and its full size).
 * Offer id = machine id × OFFER_ID_STRIDE + bundle size: stable between a search and a rent, and it names its
 * machine and size without a lookup.
 */
import { GPU_MODELS, type MachineSpec } from './machines-catalogue.js';
import type { HoldKind, MaintWindow } from './machines-contract.js';
import type { Static } from 'typebox';
import type { OfferObject } from '../offers/offers-schemas.js';
import { diskHourly, toDollars } from '../platform/money.js';

/** Room for bundle sizes up to 99 GPUs in an offer id. */
export const OFFER_ID_STRIDE = 100;
export { MAX_GPUS_PER_MACHINE } from './machines-types.js';
/** Storage priced into dph_total when a search names none (contract §6). */
export const DEFAULT_ALLOCATED_STORAGE_GB = 8;
/** A bid that displaces another must beat it by at least this much per GPU per hour ($0.001). */
export const BID_INCREMENT_MICRO = 1000;
/**
 * Machine faults under which a machine takes no new renters: its host is not heartbeating, or (`gpu`, issue 33) its
 * agent reports a GPU lost, NVML failing or a critical Xid (src/agent-server/agent-server-health.ts).
 */
export const UNRENTABLE_FAULTS = new Set(['offline', 'unknown', 'gpu']);

export type MachineFault = null | 'offline' | 'unknown' | 'exited' | 'stall' | 'gpu';

/** A machine as the fleet keeps it in memory (one per machine; every offer of the machine shares it). */
export interface MachineRecord {
  id: number;
  host_id: number;
  verification: string;
  gpu_name: string;
  num_gpus: number;
  price_gpu_micro: number;
  price_disk_micro: number;
  price_inetu_micro: number;
  price_inetd_micro: number;
  min_bid_micro: number;
  public_ipaddr: string;
  direct_port_start: number;
  direct_port_count: number;
  vms_enabled: boolean;
  fault: MachineFault;
  end_date: number;
  /** Listed for rent by its host (hosting: create_asks / unlist); false also after force_delete. */
  listed: boolean;
  deleted: boolean;
  /** Smallest bundle offered, in GPUs (the machine's full size is always offered). */
  min_chunk: number;
  credit_discount_max: number;
  /** Seconds of a `duration` listing, or null. */
  listing_duration: number | null;
  /** Maintenance windows, by start; no new rentals while one is on (empty for almost every machine). */
  maint: readonly MaintWindow[];
  spec: MachineSpec;
  /** driver_version in the client's integer encoding (535.86.05 → 535086005), computed once. */
  driver_code: number;
}

export type { MaintWindow } from './machines-contract.js';

/** A machine as its host sees it (src/hosting/): the fleet's record, its GPUs' holds and the user who hosts it (null: simulated). */
export interface HostedMachine {
  record: MachineRecord;
  userId: number | null;
  gpus: GpuHold[];
}

/** At most this many maintenance windows per machine (the offer columns hold them: offers/offer-fields.ts). */
export const MAX_MAINT_WINDOWS = 4;

export const inMaintenance = (m: MachineRecord, now: number) => m.maint.length > 0 && m.maint.some((w) => w.start <= now && now < w.end);

export interface GpuHold {
  gpu_index: number;
  instance_id: number | null;
  hold_kind: string | null;
  bid_micro: number | null;
}

/** One offer: a bundle of `num_gpus` GPUs on a machine that can be filled now. */
export interface OfferEntry {
  id: number;
  machine: MachineRecord;
  num_gpus: number;
  /** True when filling the bundle displaces bid instances (contract §6). */
  rented: boolean;
  /** Lowest bid per GPU per hour that can rent this bundle now, micro-dollars. */
  bid_floor_micro: number;
}

/** The offer index's slots as of one read: what a search's column cache needs to follow the index (machines-index.ts). */
export interface OfferSlots {
  readonly slots: readonly (OfferEntry | null)[];
  /** Changes when every slot may have moved (a new epoch, or the change log was compacted): rebuild. */
  readonly generation: number;
  /** Slot runs changed in this generation, as flat [start, count, start, count …]; only ever appended to. */
  readonly changes: readonly number[];
}

/** The GPU models of the catalogue, by name: the models gpuplane knows (a `gpu_name` filter may name them). */
export const CATALOGUE_GPU_NAMES: readonly string[] = GPU_MODELS.map((m) => m.name);

export type SearchType = 'ondemand' | 'bid' | 'reserved';

/** What a search asks that changes the offers' derived fields. */
export interface OfferContext {
  type: SearchType;
  storage_gb: number;
  now: number;
}

export const offerIdOf = (machineId: number, numGpus: number) => machineId * OFFER_ID_STRIDE + numGpus;
export const parseOfferId = (offerId: number) => ({
  machineId: Math.floor(offerId / OFFER_ID_STRIDE),
  numGpus: offerId % OFFER_ID_STRIDE,
});

/**
 * The client's integer encoding of a driver version, `535.86.05` → 535086005 (each part zero-padded to three digits,
 * a missing third part is 0); NaN when it is not a dotted version. The one encoding: machines (driver_code), search
 * filters (offers/filter.ts) and the CLI's query language (cli/offer-query.ts) all use it.
 */
export function driverCode(version: string): number {
  const parts = version.trim().split('.');
  if (parts.length < 2 || parts.length > 3 || parts.some((p) => !/^\d{1,3}$/.test(p))) return Number.NaN;
  while (parts.length < 3) parts.push('0');
  return Number(parts[0]) * 1_000_000 + Number(parts[1]) * 1000 + Number(parts[2]);
}

export function bundleSizes(numGpus: number): number[] {
  const sizes: number[] = [];
  for (let k = 1; k < numGpus; k *= 2) sizes.push(k);
  sizes.push(numGpus);
  return sizes;
}

export interface Choice {
  gpuIndexes: number[];
  /** Bid instances whose GPUs this choice takes; each loses all its GPUs. */
  outbid: number[];
  /** Highest bid per GPU among the displaced instances (0 when none). */
  topDisplacedBid: number;
}

/**
 * Picks `k` GPUs for a renter: free GPUs first (lowest index), then whole bid instances, lowest bid first, that the
 * renter may displace: an on-demand renter displaces any bid, a bidder only lower bids. Null when `k` cannot be
 * filled. `exceptInstance` (re-allocation of a stopped instance) never displaces itself.
 */
export function chooseGpus(gpus: readonly GpuHold[], k: number, kind: HoldKind, bidPerGpuMicro = 0, exceptInstance?: number): Choice | null {
  const free = gpus.filter((g) => g.instance_id === null).map((g) => g.gpu_index);
  if (free.length >= k) return { gpuIndexes: free.slice(0, k), outbid: [], topDisplacedBid: 0 };
  const byInstance = new Map<number, { bid: number; indexes: number[] }>();
  for (const g of gpus) {
    if (g.instance_id === null || g.hold_kind !== 'bid' || g.instance_id === exceptInstance) continue;
    const bid = g.bid_micro ?? 0;
    if (kind === 'bid' && bid >= bidPerGpuMicro) continue;
    const e = byInstance.get(g.instance_id) ?? { bid, indexes: [] };
    e.indexes.push(g.gpu_index);
    byInstance.set(g.instance_id, e);
  }
  const candidates = [...byInstance.entries()].sort((a, b) => a[1].bid - b[1].bid || b[0] - a[0]);
  const taken = [...free];
  const outbid: number[] = [];
  let top = 0;
  for (const [instanceId, e] of candidates) {
    if (taken.length >= k) break;
    outbid.push(instanceId);
    taken.push(...e.indexes);
    top = Math.max(top, e.bid);
  }
  if (taken.length < k) return null;
  taken.sort((a, b) => a - b);
  // Prefer free GPUs, then the displaced ones, keeping the bundle to exactly k.
  const freeSet = new Set(free);
  const chosen = [...taken.filter((i) => freeSet.has(i)), ...taken.filter((i) => !freeSet.has(i))].slice(0, k).sort((a, b) => a - b);
  return { gpuIndexes: chosen, outbid, topDisplacedBid: top };
}

/** The offers a machine shows now, one per bundle size that can be filled (by free GPUs or by outbidding bids). */
export function offersOf(machine: MachineRecord, gpus: readonly GpuHold[]): OfferEntry[] {
  const out: OfferEntry[] = [];
  if (machine.deleted) return out;
  const free = gpus.reduce((n, g) => n + (g.instance_id === null ? 1 : 0), 0);
  for (const k of bundleSizes(machine.num_gpus)) {
    if (k < machine.min_chunk && k < machine.num_gpus) continue;
    if (k <= free) {
      out.push({ id: offerIdOf(machine.id, k), machine, num_gpus: k, rented: false, bid_floor_micro: machine.min_bid_micro });
      continue;
    }
    const choice = chooseGpus(gpus, k, 'ondemand');
    if (!choice) continue;
    out.push({
      id: offerIdOf(machine.id, k),
      machine,
      num_gpus: k,
      rented: true,
      bid_floor_micro: Math.max(machine.min_bid_micro, choice.topDisplacedBid + BID_INCREMENT_MICRO),
    });
  }
  return out;
}

/** Offered to renters: listed by its host, online (heartbeating), its listing not ended, and not in maintenance. */
export const isRentable = (m: MachineRecord, now: number) =>
  m.listed && !UNRENTABLE_FAULTS.has(m.fault ?? '') && m.end_date > now && !inMaintenance(m, now);

/** Hourly price of the bundle's GPUs for the search type, micro-dollars (before storage). */
export function gpuPriceMicro(o: OfferEntry, type: SearchType): number {
  return (type === 'bid' ? o.bid_floor_micro : o.machine.price_gpu_micro) * o.num_gpus;
}

/**
 * The one price formula, $/hour: the GPUs' price (micro-dollars/hour, gpuPriceMicro) plus `gb` of disk at `disk`
 * $/GB/month. offerJson and the search's columns (offers/offer-fields.ts) both call it, so they give the same doubles.
 */
export const hourlyPrice = (gpuMicro: number, disk: number, gb: number) => toDollars(gpuMicro) + diskHourly(disk, gb);
export const storageHourly = (o: OfferEntry, gb: number) => diskHourly(toDollars(o.machine.price_disk_micro), gb);
export const dphTotal = (o: OfferEntry, c: Pick<OfferContext, 'type' | 'storage_gb'>) => hourlyPrice(gpuPriceMicro(o, c.type), toDollars(o.machine.price_disk_micro), c.storage_gb);
export const dlperfOf = (o: OfferEntry) => o.machine.spec.dlperf_per_gpu * o.num_gpus;
export const totalFlopsOf = (o: OfferEntry) => o.machine.spec.tflops_per_gpu * o.num_gpus;
/** Marketplace-style ranking: performance per dollar, weighted by how reliable the machine is. */
export const scoreOf = (o: OfferEntry, c: Pick<OfferContext, 'type' | 'storage_gb'>) => (dlperfOf(o) / dphTotal(o, c)) * o.machine.spec.reliability;

/**
 * The fields of offerJson that depend on the search's prices (its type and storage), computed as offerJson does. A
 * search reply keeps the rest of each offer's JSON and computes only these and the clock's (offers/offer-json.ts).
 */
export function offerPriceValues(o: OfferEntry, c: Pick<OfferContext, 'type' | 'storage_gb'>) {
  const dph = dphTotal(o, c);
  const dlperf = dlperfOf(o);
  return {
    dlperf_per_dphtotal: dlperf / dph,
    flops_per_dphtotal: totalFlopsOf(o) / dph,
    score: scoreOf(o, c),
    is_bid: c.type === 'bid',
    dph_base: toDollars(gpuPriceMicro(o, c.type)),
    dph_total: dph,
    discounted_dph_total: dph * (1 - o.machine.spec.reserved_discount),
    storage_total_cost: storageHourly(o, c.storage_gb),
    allocated_storage: c.storage_gb,
  };
}

/** The fields of offerJson that depend on the clock alone. */
export function offerClockValues(o: OfferEntry, now: number) {
  return {
    rentable: isRentable(o.machine, now),
    duration: Math.max(0, o.machine.end_date - now),
  };
}

/** Every field of offerJson that depends on the search (its prices and the clock). */
export function offerContextValues(o: OfferEntry, c: OfferContext) {
  return { ...offerPriceValues(o, c), ...offerClockValues(o, c.now) };
}

export type OfferContextKey = keyof ReturnType<typeof offerContextValues>;
export type OfferClockKey = keyof ReturnType<typeof offerClockValues>;

/** The offer as the API shows it: every field client-compat.md lists, with the JSON types it names. */
export function offerJson(o: OfferEntry, c: OfferContext): Static<typeof OfferObject> {
  const m = o.machine;
  const s = m.spec;
  const frac = o.num_gpus / m.num_gpus;
  const v = offerContextValues(o, c);
  return {
    id: o.id,
    ask_contract_id: o.id,
    machine_id: m.id,
    host_id: m.host_id,
    num_gpus: o.num_gpus,
    gpu_name: m.gpu_name,
    gpu_ram: s.gpu_ram,
    gpu_total_ram: s.gpu_ram * o.num_gpus,
    gpu_frac: frac,
    gpu_mem_bw: s.gpu_mem_bw,
    gpu_max_power: s.gpu_max_power,
    gpu_max_temp: s.gpu_max_temp,
    gpu_arch: s.gpu_arch,
    gpu_display_active: s.gpu_display_active,
    compute_cap: s.compute_cap,
    total_flops: totalFlopsOf(o),
    dlperf: dlperfOf(o),
    dlperf_per_dphtotal: v.dlperf_per_dphtotal,
    flops_per_dphtotal: v.flops_per_dphtotal,
    score: v.score,
    bw_nvlink: s.bw_nvlink,
    pci_gen: s.pci_gen,
    pcie_bw: s.pcie_bw,
    cpu_name: s.cpu_name,
    cpu_arch: s.cpu_arch,
    cpu_cores: s.cpu_cores,
    cpu_cores_effective: s.cpu_cores * frac,
    cpu_ghz: s.cpu_ghz,
    cpu_ram: Math.round(s.cpu_ram * frac),
    has_avx: s.has_avx,
    mobo_name: s.mobo_name,
    disk_space: s.disk_space * frac,
    disk_bw: s.disk_bw,
    disk_name: s.disk_name,
    inet_up: s.inet_up,
    inet_down: s.inet_down,
    inet_up_cost: toDollars(m.price_inetu_micro),
    inet_down_cost: toDollars(m.price_inetd_micro),
    driver_version: s.driver_version,
    cuda_max_good: s.cuda_max_good,
    ubuntu_version: s.ubuntu_version,
    reliability: s.reliability,
    reliability2: s.reliability,
    geolocation: s.geolocation,
    datacenter: s.datacenter,
    hosting_type: s.datacenter ? 1 : 0,
    static_ip: s.static_ip,
    external: s.external,
    cluster_id: s.cluster_id,
    verification: m.verification,
    verified: m.verification === 'verified',
    rentable: v.rentable,
    rented: o.rented,
    is_bid: v.is_bid,
    direct_port_count: m.direct_port_count,
    public_ipaddr: m.public_ipaddr,
    vms_enabled: m.vms_enabled,
    min_bid: toDollars(o.bid_floor_micro * o.num_gpus),
    dph_base: v.dph_base,
    dph_total: v.dph_total,
    discounted_dph_total: v.discounted_dph_total,
    storage_cost: toDollars(m.price_disk_micro),
    storage_total_cost: v.storage_total_cost,
    allocated_storage: v.allocated_storage,
    duration: v.duration,
    end_date: m.end_date,
    bundle_id: o.id,
  };
}
