/**
 * The simulated fleet's catalogue: real GPU models with their real VRAM (MB), typical marketplace prices, and the
 * hardware they ship in. Seeding draws machines from it with SeededRandom, so one seed always gives one fleet.
 */
import { toMicro } from '../platform/money.js';
import type { SeededRandom } from '../platform/random.js';

export interface GpuModel {
  name: string;
  /** VRAM per GPU in MB, as the REST interface reports it. */
  gpu_ram: number;
  /** Typical on-demand $/hour per GPU on today's marketplaces. */
  price: number;
  /** FP32 TFLOPS per GPU. */
  tflops: number;
  /** Deep-learning performance score per GPU (marketplace-style, roughly FP16 throughput). */
  dlperf: number;
  /** CUDA compute capability × 100 (8.9 → 890). */
  compute_cap: number;
  /** Memory bandwidth GB/s. */
  gpu_mem_bw: number;
  /** Board power W. */
  gpu_max_power: number;
  /** Highest PCIe generation the card speaks. */
  pci_gen: number;
  /** NVLink bandwidth GB/s (SXM parts), 0 otherwise. */
  bw_nvlink: number;
  /** Lowest driver major that supports the card. */
  min_driver: number;
  datacenter: boolean;
  /** Relative frequency in the fleet. */
  weight: number;
}

export const GPU_MODELS: readonly GpuModel[] = [
  { name: 'RTX 3060', gpu_ram: 12288, price: 0.07, tflops: 12.7, dlperf: 7.5, compute_cap: 860, gpu_mem_bw: 360, gpu_max_power: 170, pci_gen: 4, bw_nvlink: 0, min_driver: 460, datacenter: false, weight: 5 },
  { name: 'RTX 3070', gpu_ram: 8192, price: 0.09, tflops: 20.3, dlperf: 10.8, compute_cap: 860, gpu_mem_bw: 448, gpu_max_power: 220, pci_gen: 4, bw_nvlink: 0, min_driver: 460, datacenter: false, weight: 4 },
  { name: 'RTX 3080', gpu_ram: 10240, price: 0.12, tflops: 29.8, dlperf: 15.4, compute_cap: 860, gpu_mem_bw: 760, gpu_max_power: 320, pci_gen: 4, bw_nvlink: 0, min_driver: 460, datacenter: false, weight: 5 },
  { name: 'RTX 3090', gpu_ram: 24576, price: 0.2, tflops: 35.6, dlperf: 20.1, compute_cap: 860, gpu_mem_bw: 936, gpu_max_power: 350, pci_gen: 4, bw_nvlink: 0, min_driver: 460, datacenter: false, weight: 12 },
  { name: 'RTX 3090 Ti', gpu_ram: 24576, price: 0.24, tflops: 40, dlperf: 22.3, compute_cap: 860, gpu_mem_bw: 1008, gpu_max_power: 450, pci_gen: 4, bw_nvlink: 0, min_driver: 510, datacenter: false, weight: 2 },
  { name: 'RTX 4070', gpu_ram: 12282, price: 0.12, tflops: 29.1, dlperf: 17.6, compute_cap: 890, gpu_mem_bw: 504, gpu_max_power: 200, pci_gen: 4, bw_nvlink: 0, min_driver: 525, datacenter: false, weight: 3 },
  { name: 'RTX 4080', gpu_ram: 16376, price: 0.22, tflops: 48.7, dlperf: 28.9, compute_cap: 890, gpu_mem_bw: 717, gpu_max_power: 320, pci_gen: 4, bw_nvlink: 0, min_driver: 525, datacenter: false, weight: 4 },
  { name: 'RTX 4090', gpu_ram: 24564, price: 0.35, tflops: 82.6, dlperf: 43.5, compute_cap: 890, gpu_mem_bw: 1008, gpu_max_power: 450, pci_gen: 4, bw_nvlink: 0, min_driver: 525, datacenter: false, weight: 16 },
  { name: 'RTX 5090', gpu_ram: 32607, price: 0.65, tflops: 104.8, dlperf: 61.2, compute_cap: 1200, gpu_mem_bw: 1792, gpu_max_power: 575, pci_gen: 5, bw_nvlink: 0, min_driver: 570, datacenter: false, weight: 6 },
  { name: 'RTX A4000', gpu_ram: 16376, price: 0.15, tflops: 19.2, dlperf: 11.9, compute_cap: 860, gpu_mem_bw: 448, gpu_max_power: 140, pci_gen: 4, bw_nvlink: 0, min_driver: 460, datacenter: false, weight: 3 },
  { name: 'RTX A5000', gpu_ram: 24564, price: 0.22, tflops: 27.8, dlperf: 16.6, compute_cap: 860, gpu_mem_bw: 768, gpu_max_power: 230, pci_gen: 4, bw_nvlink: 0, min_driver: 460, datacenter: false, weight: 3 },
  { name: 'RTX A6000', gpu_ram: 49140, price: 0.45, tflops: 38.7, dlperf: 23.4, compute_cap: 860, gpu_mem_bw: 768, gpu_max_power: 300, pci_gen: 4, bw_nvlink: 0, min_driver: 460, datacenter: true, weight: 5 },
  { name: 'RTX 6000Ada', gpu_ram: 49140, price: 0.75, tflops: 91.1, dlperf: 47.8, compute_cap: 890, gpu_mem_bw: 960, gpu_max_power: 300, pci_gen: 4, bw_nvlink: 0, min_driver: 525, datacenter: true, weight: 3 },
  { name: 'L40S', gpu_ram: 46068, price: 0.85, tflops: 91.6, dlperf: 49.3, compute_cap: 890, gpu_mem_bw: 864, gpu_max_power: 350, pci_gen: 4, bw_nvlink: 0, min_driver: 525, datacenter: true, weight: 3 },
  { name: 'A40', gpu_ram: 46068, price: 0.4, tflops: 37.4, dlperf: 22.1, compute_cap: 860, gpu_mem_bw: 696, gpu_max_power: 300, pci_gen: 4, bw_nvlink: 0, min_driver: 460, datacenter: true, weight: 2 },
  { name: 'Tesla T4', gpu_ram: 15360, price: 0.1, tflops: 8.1, dlperf: 6.2, compute_cap: 750, gpu_mem_bw: 320, gpu_max_power: 70, pci_gen: 3, bw_nvlink: 0, min_driver: 418, datacenter: true, weight: 2 },
  { name: 'Tesla V100', gpu_ram: 16384, price: 0.25, tflops: 15.7, dlperf: 14.5, compute_cap: 700, gpu_mem_bw: 900, gpu_max_power: 300, pci_gen: 3, bw_nvlink: 300, min_driver: 418, datacenter: true, weight: 2 },
  { name: 'A100 PCIE', gpu_ram: 40960, price: 0.8, tflops: 19.5, dlperf: 37.9, compute_cap: 800, gpu_mem_bw: 1555, gpu_max_power: 250, pci_gen: 4, bw_nvlink: 0, min_driver: 450, datacenter: true, weight: 3 },
  { name: 'A100 SXM4', gpu_ram: 81920, price: 1.1, tflops: 19.5, dlperf: 43.2, compute_cap: 800, gpu_mem_bw: 2039, gpu_max_power: 400, pci_gen: 4, bw_nvlink: 600, min_driver: 450, datacenter: true, weight: 4 },
  { name: 'H100 PCIE', gpu_ram: 81559, price: 1.9, tflops: 51.2, dlperf: 72.8, compute_cap: 900, gpu_mem_bw: 2000, gpu_max_power: 350, pci_gen: 5, bw_nvlink: 0, min_driver: 525, datacenter: true, weight: 2 },
  { name: 'H100 SXM', gpu_ram: 81559, price: 2.3, tflops: 66.9, dlperf: 94.6, compute_cap: 900, gpu_mem_bw: 3350, gpu_max_power: 700, pci_gen: 5, bw_nvlink: 900, min_driver: 525, datacenter: true, weight: 4 },
  { name: 'H200', gpu_ram: 143771, price: 3.2, tflops: 66.9, dlperf: 102.3, compute_cap: 900, gpu_mem_bw: 4800, gpu_max_power: 700, pci_gen: 5, bw_nvlink: 900, min_driver: 550, datacenter: true, weight: 2 },
];

/** Driver versions seen on hosts, with the newest CUDA each supports. */
export const DRIVERS: readonly { version: string; cuda: number }[] = [
  { version: '535.104.05', cuda: 12.2 },
  { version: '535.183.01', cuda: 12.2 },
  { version: '545.29.06', cuda: 12.3 },
  { version: '550.54.14', cuda: 12.4 },
  { version: '550.127.05', cuda: 12.4 },
  { version: '555.42.02', cuda: 12.5 },
  { version: '560.35.03', cuda: 12.6 },
  { version: '565.57.01', cuda: 12.7 },
  { version: '570.124.06', cuda: 12.8 },
  { version: '575.57.08', cuda: 12.9 },
];

const CPUS: readonly { name: string; cores: number; ghz: number; arch: string; server: boolean }[] = [
  { name: 'AMD Ryzen 9 5950X 16-Core Processor', cores: 32, ghz: 3.4, arch: 'amd64', server: false },
  { name: 'AMD Ryzen 9 7950X 16-Core Processor', cores: 32, ghz: 4.5, arch: 'amd64', server: false },
  { name: 'Intel Core i9-13900K', cores: 32, ghz: 3.0, arch: 'amd64', server: false },
  { name: 'Intel Core i7-12700K', cores: 20, ghz: 3.6, arch: 'amd64', server: false },
  { name: 'AMD Ryzen Threadripper PRO 5975WX 32-Cores', cores: 64, ghz: 3.6, arch: 'amd64', server: false },
  { name: 'AMD EPYC 7543 32-Core Processor', cores: 64, ghz: 2.8, arch: 'amd64', server: true },
  { name: 'AMD EPYC 7763 64-Core Processor', cores: 128, ghz: 2.45, arch: 'amd64', server: true },
  { name: 'AMD EPYC 9654 96-Core Processor', cores: 192, ghz: 2.4, arch: 'amd64', server: true },
  { name: 'Intel Xeon Gold 6338 CPU @ 2.00GHz', cores: 64, ghz: 2.0, arch: 'amd64', server: true },
  { name: 'Intel Xeon Platinum 8480+', cores: 112, ghz: 2.0, arch: 'amd64', server: true },
];

const MOBOS = ['ROG STRIX X570-E', 'PRIME Z790-P', 'WRX80E-SAGE', 'H12SSL-i', 'MZ73-LM0', 'X12DPG-QT6', 'TRX40 PRO', 'B550 AORUS ELITE'];

export const GEOLOCATIONS = [
  'Texas, US', 'California, US', 'Oregon, US', 'Virginia, US', 'Utah, US', 'Quebec, CA', 'Ontario, CA', 'Germany, DE',
  'Netherlands, NL', 'Sweden, SE', 'Norway, NO', 'Finland, FI', 'Poland, PL', 'Czechia, CZ', 'Spain, ES',
  'United Kingdom, GB', 'Japan, JP', 'Korea, KR', 'Taiwan, TW', 'Singapore, SG', 'Australia, AU', 'Brazil, BR',
];

/** The hardware description of a machine; stored as JSON in `fleet_machines.spec`, shown as offer fields. */
export interface MachineSpec {
  gpu_ram: number;
  gpu_mem_bw: number;
  gpu_max_power: number;
  gpu_max_temp: number;
  gpu_arch: string;
  gpu_display_active: boolean;
  compute_cap: number;
  tflops_per_gpu: number;
  dlperf_per_gpu: number;
  bw_nvlink: number;
  pci_gen: number;
  pcie_bw: number;
  cpu_name: string;
  cpu_arch: string;
  cpu_cores: number;
  cpu_ghz: number;
  /** Machine RAM in MB. */
  cpu_ram: number;
  has_avx: boolean;
  mobo_name: string;
  /** Machine disk in GB. */
  disk_space: number;
  disk_bw: number;
  disk_name: string;
  inet_up: number;
  inet_down: number;
  driver_version: string;
  cuda_max_good: number;
  ubuntu_version: string;
  reliability: number;
  geolocation: string;
  datacenter: boolean;
  static_ip: boolean;
  external: boolean;
  cluster_id: number | null;
  /** Fraction off dph_total for reserved (prepaid) rentals. */
  reserved_discount: number;
  /** Run by `gpuplane agent` (a real host): its own agent reports, not the emulator's simulated one (src/emulator/simulated-hosts/). */
  agent?: boolean;
  /** The host declared the hardware (`gpuplane agent --hardware`) instead of discovery: never `verified`. */
  hardware_declared?: boolean;
  /** A real host's agent says whether each container's `disk` is enforced (agent-protocol-schemas.ts `disk_limit`). */
  disk_limit?: boolean;
}

/** A machine to insert: prices in micro-dollars, the host's verification, the spec. */
export interface NewMachine {
  verification: 'verified' | 'unverified';
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
  /** Seconds from now the machine stays listed. */
  listed_for: number;
  spec: MachineSpec;
}

const DAY_S = 86_400;
const round = (x: number, step: number) => Math.round(x / step) * step;

function weighted<T extends { weight: number }>(rnd: SeededRandom, items: readonly T[]): T {
  const total = items.reduce((s, i) => s + i.weight, 0);
  let r = rnd.next() * total;
  for (const i of items) if ((r -= i.weight) < 0) return i;
  return items[items.length - 1];
}

/** Draws one machine of a random (weighted) model. `n` numbers machines so IPs and ports differ. */
export function drawMachine(rnd: SeededRandom, n: number): NewMachine {
  const model = weighted(rnd, GPU_MODELS);
  return machineOf(rnd, model, n);
}

export function machineOf(rnd: SeededRandom, model: GpuModel, n: number): NewMachine {
  const sizes = model.datacenter ? [1, 2, 4, 8, 8, 8] : [1, 1, 1, 2, 2, 4, 4, 8];
  const num_gpus = rnd.pick(sizes);
  // Datacenter cards and big boxes sit on server CPUs; a single consumer card on a desktop one.
  const cpu = rnd.pick(CPUS.filter((c) => c.server === (model.datacenter || num_gpus >= 4)));
  const drivers = DRIVERS.filter((d) => Number(d.version.split('.')[0]) >= model.min_driver);
  const driver = rnd.pick(drivers);
  const datacenter = model.datacenter ? rnd.chance(0.7) : rnd.chance(0.1);
  const price = round(model.price * rnd.range(0.8, 1.3), 0.001);
  const pcie = model.pci_gen === 5 ? rnd.pick([25.2, 50.4]) : model.pci_gen === 4 ? rnd.pick([12.6, 24.6, 24.6]) : rnd.pick([6.1, 12.1]);
  const ramPerGpu = rnd.pick([32768, 65536, 131072, 262144]);
  return {
    verification: rnd.chance(datacenter ? 0.95 : 0.7) ? 'verified' : 'unverified',
    gpu_name: model.name,
    num_gpus,
    price_gpu_micro: toMicro(price),
    price_disk_micro: toMicro(round(rnd.range(0.05, 0.3), 0.005)),
    price_inetu_micro: toMicro(round(rnd.range(0.001, 0.02), 0.0005)),
    price_inetd_micro: toMicro(round(rnd.range(0.001, 0.02), 0.0005)),
    min_bid_micro: toMicro(round(price * rnd.range(0.35, 0.6), 0.001)),
    public_ipaddr: `${rnd.pick([24, 50, 64, 68, 73, 98, 142, 173, 185, 193, 212])}.${rnd.int(0, 256)}.${(n >> 8) & 255}.${n & 255}`,
    direct_port_start: 10000 + rnd.int(0, 400) * 100,
    direct_port_count: rnd.pick([0, 8, 16, 50, 100, 100, 200, 500]),
    vms_enabled: rnd.chance(0.2),
    listed_for: rnd.int(7, 180) * DAY_S + rnd.int(0, DAY_S),
    spec: {
      gpu_ram: model.gpu_ram,
      gpu_mem_bw: model.gpu_mem_bw,
      gpu_max_power: model.gpu_max_power,
      gpu_max_temp: rnd.pick([83, 85, 87, 88, 90]),
      gpu_arch: 'nvidia',
      gpu_display_active: !datacenter && rnd.chance(0.1),
      compute_cap: model.compute_cap,
      tflops_per_gpu: model.tflops,
      dlperf_per_gpu: round(model.dlperf * rnd.range(0.9, 1.05), 0.01),
      bw_nvlink: model.bw_nvlink,
      pci_gen: model.pci_gen,
      pcie_bw: pcie,
      cpu_name: cpu.name,
      cpu_arch: cpu.arch,
      cpu_cores: cpu.cores,
      cpu_ghz: cpu.ghz,
      cpu_ram: ramPerGpu * num_gpus,
      has_avx: true,
      mobo_name: rnd.pick(MOBOS),
      disk_space: rnd.pick([250, 500, 1000, 2000, 4000, 8000]) * Math.max(1, num_gpus / 2),
      disk_bw: round(rnd.range(400, 7000), 1),
      disk_name: rnd.pick(['Samsung SSD 980 PRO 2TB', 'WD_BLACK SN850X 4TB', 'Micron 7450 PRO', 'KIOXIA CM6', 'Crucial P5 Plus']),
      inet_up: round(rnd.range(datacenter ? 800 : 80, datacenter ? 10000 : 1000), 0.1),
      inet_down: round(rnd.range(datacenter ? 800 : 200, datacenter ? 10000 : 2000), 0.1),
      driver_version: driver.version,
      cuda_max_good: driver.cuda,
      ubuntu_version: rnd.pick(['20.04', '22.04', '22.04', '24.04']),
      reliability: round(rnd.range(0.9, 0.999), 0.0001),
      geolocation: rnd.pick(GEOLOCATIONS),
      datacenter,
      static_ip: datacenter || rnd.chance(0.3),
      external: false,
      cluster_id: datacenter && num_gpus === 8 && rnd.chance(0.3) ? rnd.int(1, 40) : null,
      reserved_discount: round(rnd.range(0.15, 0.45), 0.01),
    },
  };
}
