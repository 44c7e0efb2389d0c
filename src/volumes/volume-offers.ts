/**
 * Volume offers: every rentable machine offers its free disk space as one volume offer (contract §3). Pure
 * functions over the fleet's machine records, so search shows exactly what create checks.
 *
 * Volume offer id = machine id × OFFER_ID_STRIDE: the bundle-size-0 slot of the machine's offer ids, which no GPU
 * offer uses, so a volume offer id is never mistaken for a GPU offer id (or the other way round).
 */
import { driverCode, isRentable, OFFER_ID_STRIDE, type MachineRecord } from '../machines/machines-offers-contract.js';
import { diskHourly, toDollars } from '../platform/money.js';
import { GEOLOCATION_MATCHING, normalizeGpuName, OFFER_FIELD_RANGES, type FieldDef, type FieldTable, type FieldType } from '../offers/offers-contract.js';
import type { Static } from 'typebox';
import type { VolumeOfferObject } from './volumes-schemas.js';

/** Storage priced into `storage_total_cost` when a search names none (the vastai client sends 1.0). */
export const DEFAULT_VOLUME_STORAGE_GB = 1;

export const volumeOfferIdOf = (machineId: number) => machineId * OFFER_ID_STRIDE;
/** The machine of a volume offer id, or undefined when the id is not one. */
export function machineOfVolumeOffer(offerId: number): number | undefined {
  if (!Number.isSafeInteger(offerId) || offerId < OFFER_ID_STRIDE || offerId % OFFER_ID_STRIDE !== 0) return undefined;
  return offerId / OFFER_ID_STRIDE;
}

export interface VolumeOfferContext {
  storage_gb: number;
  now: number;
}

export type VolumeOffer = Static<typeof VolumeOfferObject>;

/** The offer as the API shows it: the fields the vastai client prints for `search volumes`; `ask`: the host's volume ask. */
export function volumeOfferJson(
  m: MachineRecord,
  usedGb: number,
  c: VolumeOfferContext,
  ask: { offeredGb: number; priceDiskMicro: number } = { offeredGb: m.spec.disk_space, priceDiskMicro: m.price_disk_micro },
): VolumeOffer {
  const s = m.spec;
  // What the host offers (create_asks vol_size, within its free disk) less what its live volumes hold.
  const free = Math.max(0, ask.offeredGb - usedGb);
  const storageCost = toDollars(ask.priceDiskMicro);
  const hourly = diskHourly(storageCost, c.storage_gb);
  return {
    id: volumeOfferIdOf(m.id),
    ask_contract_id: volumeOfferIdOf(m.id),
    machine_id: m.id,
    host_id: m.host_id,
    disk_space: free,
    disk_bw: s.disk_bw,
    disk_name: s.disk_name,
    storage_cost: storageCost,
    storage_total_cost: hourly,
    allocated_storage: c.storage_gb,
    cpu_arch: s.cpu_arch,
    cpu_ghz: s.cpu_ghz,
    cuda_max_good: s.cuda_max_good,
    driver_version: s.driver_version,
    gpu_arch: s.gpu_arch,
    gpu_name: m.gpu_name,
    has_avx: s.has_avx,
    pci_gen: s.pci_gen,
    pcie_bw: s.pcie_bw,
    total_flops: s.tflops_per_gpu * m.num_gpus,
    ubuntu_version: s.ubuntu_version,
    inet_up: s.inet_up,
    inet_down: s.inet_down,
    reliability: s.reliability,
    reliability2: s.reliability,
    geolocation: s.geolocation,
    datacenter: s.datacenter,
    static_ip: s.static_ip,
    external: s.external,
    cluster_id: s.cluster_id,
    verification: m.verification,
    verified: m.verification === 'verified',
    rentable: isRentable(m, c.now),
    duration: Math.max(0, m.end_date - c.now),
    end_date: m.end_date,
    // Ranking as for GPU offers: what a GB-month buys, weighted by reliability (cheaper, more reliable first).
    score: (s.reliability * s.disk_bw) / Math.max(storageCost, 0.001),
  };
}

const field = (name: string, type: FieldType, extra: Partial<FieldDef<VolumeOffer, VolumeOfferContext>> = {}): [string, FieldDef<VolumeOffer, VolumeOfferContext>] => [
  name,
  { type, get: (r) => ((r as Record<string, unknown>)[name] ?? null) as never, ...extra },
];

/** The filterable fields of a volume offer: the client's `vol_offers_fields` and what it prints. */
export const VOLUME_OFFER_FIELDS: FieldTable<VolumeOffer, VolumeOfferContext> = Object.fromEntries([
  field('id', 'integer'),
  field('machine_id', 'integer'),
  field('host_id', 'integer'),
  field('cluster_id', 'integer'),
  field('disk_space', 'number'),
  field('disk_bw', 'number'),
  field('disk_name', 'string'),
  field('storage_cost', 'number'),
  field('storage_total_cost', 'number'),
  field('cpu_arch', 'string'),
  field('cpu_ghz', 'number'),
  field('cuda_max_good', 'number'),
  ['driver_version', { type: 'version', get: (r: VolumeOffer) => driverCode(String(r.driver_version)) }],
  field('gpu_arch', 'string'),
  field('gpu_name', 'string', { normalize: normalizeGpuName, get: (r) => normalizeGpuName(String(r.gpu_name)) }),
  field('has_avx', 'boolean'),
  field('pci_gen', 'number'),
  field('pcie_bw', 'number'),
  field('total_flops', 'number'),
  field('ubuntu_version', 'string'),
  field('inet_up', 'number'),
  field('inet_down', 'number'),
  field('reliability', 'number', { range: OFFER_FIELD_RANGES.reliability }),
  field('reliability2', 'number', { range: OFFER_FIELD_RANGES.reliability2 }),
  // Country codes and region names as in offer search (issue 29 item 4).
  field('geolocation', 'string', GEOLOCATION_MATCHING),
  field('datacenter', 'boolean'),
  field('static_ip', 'boolean'),
  field('external', 'boolean'),
  field('verification', 'string'),
  field('verified', 'boolean'),
  field('rentable', 'boolean'),
  field('duration', 'number'),
  field('score', 'number'),
]);

/** The client's other names for fields (`cuda_vers`). */
export const VOLUME_OFFER_ALIASES: Record<string, string> = { cuda_vers: 'cuda_max_good' };
