/**
 * Reading `nvidia-smi`: the query, the parser of its CSV, the CUDA version from its banner, and the marketplace name
 * of a GPU model. Pure functions over text, so captured outputs of real drivers are the tests.
 */
import type { AgentGpuT } from '../protocol/agent-protocol-schemas.js';

/**
 * Field names of `nvidia-smi --query-gpu` (see `nvidia-smi --help-query-gpu`). `pcie.link.*.max` is the most the GPU
 * and its slot can do together (a x16 card in a x8 slot says 8), which is what a renter gets.
 */
export const QUERY_FIELDS = [
  'index',
  'name',
  'uuid',
  'memory.total',
  'driver_version',
  'pcie.link.gen.max',
  'pcie.link.width.max',
  'power.limit',
  'compute_cap',
] as const;

/** `compute_cap` is a query field only since driver 510; older drivers refuse the whole query because of it. */
export const QUERY_FIELDS_WITHOUT_COMPUTE_CAP = QUERY_FIELDS.filter((f) => f !== 'compute_cap');

export function queryArgs(fields: readonly string[]): string[] {
  return [`--query-gpu=${fields.join(',')}`, '--format=csv,noheader,nounits'];
}

export class NvidiaSmiError extends Error {}

/** One GPU row, with the driver version that the query repeats on every row. */
export interface SmiGpu extends AgentGpuT {
  driver_version: string;
}

/** nvidia-smi's words for a value it cannot give: `[N/A]`, `[Not Supported]`, `[Unknown Error]`, `N/A` (old drivers). */
function unknown(v: string): boolean {
  return v === '' || v === 'N/A' || /^\[.*\]$/.test(v);
}

function num(v: string, field: string): number | null {
  if (unknown(v)) return null;
  const n = Number(v);
  if (!Number.isFinite(n)) throw new NvidiaSmiError(`nvidia-smi gave ${JSON.stringify(v)} for ${field}, not a number`);
  return n;
}

function int(v: string, field: string): number | null {
  const n = num(v, field);
  return n === null ? null : Math.round(n);
}

/** Parses the CSV of `queryArgs(fields)`; `fields` says which columns there are. */
export function parseGpuQuery(text: string, fields: readonly string[] = QUERY_FIELDS): SmiGpu[] {
  const col = (name: string) => fields.indexOf(name);
  const rows = text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== '');
  const gpus = rows.map((line) => {
    // No field of this query contains a comma (product names do not), so a plain split is exact.
    const cells = line.split(',').map((c) => c.trim());
    if (cells.length !== fields.length) {
      throw new NvidiaSmiError(`nvidia-smi printed ${cells.length} columns where ${fields.length} were asked for: ${JSON.stringify(line)}`);
    }
    const get = (name: string) => (col(name) < 0 ? '' : cells[col(name)]);
    const index = int(get('index'), 'index');
    if (index === null || index < 0) throw new NvidiaSmiError(`nvidia-smi gave no GPU index in ${JSON.stringify(line)}`);
    const name = get('name');
    if (unknown(name)) throw new NvidiaSmiError(`nvidia-smi gave no name for GPU ${index}`);
    const cap = num(get('compute_cap'), 'compute_cap');
    return {
      index,
      name,
      uuid: unknown(get('uuid')) ? null : get('uuid'),
      gpu_ram: num(get('memory.total'), 'memory.total'),
      driver_version: get('driver_version'),
      pci_gen: int(get('pcie.link.gen.max'), 'pcie.link.gen.max'),
      pcie_width: int(get('pcie.link.width.max'), 'pcie.link.width.max'),
      gpu_max_power: num(get('power.limit'), 'power.limit'),
      // "8.9" → 890, the offer's unit.
      compute_cap: cap === null ? null : Math.round(cap * 100),
    };
  });
  return gpus.sort((a, b) => a.index - b.index);
}

/** The "CUDA Version: 12.4" of nvidia-smi's banner, or null (some containers and vGPU guests print `N/A`). */
export function parseCudaVersion(banner: string): number | null {
  const m = /CUDA Version\s*:\s*(\d+\.\d+)/.exec(banner);
  return m ? Number(m[1]) : null;
}

/**
 * The newest CUDA each driver branch supports (NVIDIA's CUDA release notes, "minimum driver"), for when the banner
 * does not say: the first entry whose driver major is at most the host's.
 */
const CUDA_BY_DRIVER: readonly [number, number][] = [
  [575, 12.9], [570, 12.8], [565, 12.7], [560, 12.6], [555, 12.5], [550, 12.4], [545, 12.3], [535, 12.2],
  [530, 12.1], [525, 12.0], [520, 11.8], [515, 11.7], [510, 11.6], [495, 11.5], [470, 11.4], [465, 11.3],
  [460, 11.2], [455, 11.1], [450, 11.0], [440, 10.2], [418, 10.1], [410, 10.0],
];

export function cudaForDriver(driverVersion: string): number | null {
  const major = Number(driverVersion.split('.')[0]);
  if (!Number.isFinite(major)) return null;
  return CUDA_BY_DRIVER.find(([d]) => major >= d)?.[1] ?? null;
}

/** GB/s per lane of each PCIe generation, after line encoding (8b/10b to gen 2, 128b/130b from gen 3). */
const PCIE_LANE_GBPS: Record<number, number> = { 1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563 };

/** Theoretical host-to-GPU bandwidth in GB/s (the offer's `pcie_bw`), or null when either figure is unknown. */
export function pcieBandwidth(gen: number | null, width: number | null): number | null {
  if (gen === null || width === null || PCIE_LANE_GBPS[gen] === undefined) return null;
  return Math.round(PCIE_LANE_GBPS[gen] * width * 10) / 10;
}

/**
 * Data-centre parts carry form factor and memory in the product name (`NVIDIA A100-SXM4-80GB`); the marketplace names
 * the model and form factor only. The H100 SXM5 reports itself as `H100 80GB HBM3`.
 */
const NAMED_MODELS: readonly [RegExp, string][] = [
  [/^A100\b.*\bSXM/i, 'A100 SXM4'],
  [/^A100\b.*\bPCIE/i, 'A100 PCIE'],
  [/^A100\b/i, 'A100 PCIE'],
  [/^H100\b.*\bPCIE/i, 'H100 PCIE'],
  [/^H100\b.*\bNVL/i, 'H100 NVL'],
  [/^H100\b/i, 'H100 SXM'],
  [/^H200\b.*\bNVL/i, 'H200 NVL'],
  [/^H200\b/i, 'H200'],
  [/^(Tesla )?V100\b/i, 'Tesla V100'],
  [/^RTX 6000 Ada\b/i, 'RTX 6000Ada'],
];

/** `NVIDIA GeForce RTX 4090` → `RTX 4090`, `NVIDIA A100-SXM4-80GB` → `A100 SXM4`: the offer's `gpu_name`. */
export function marketplaceGpuName(productName: string): string {
  const s = productName.trim().replace(/\s+/g, ' ').replace(/^NVIDIA /i, '').replace(/^GeForce /i, '');
  for (const [re, name] of NAMED_MODELS) if (re.test(s)) return name;
  // Any other part: drop a memory suffix ("-16GB", " 48GB").
  return s.replace(/[- ]\d+GB$/i, '').trim() || productName.trim();
}
