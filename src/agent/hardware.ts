/**
 * The machine's hardware in the offer's terms: GPUs from `nvidia-smi`, CPU, RAM and host name from the OS, free disk
 * of the runtime's data root, the public address and port range from configuration. Or, with `--hardware FILE`, as the
 * host declares it (hardware-file.ts), marked `hardware_declared`.
 */
import { execFile } from 'node:child_process';
import { statfs } from 'node:fs/promises';
import os from 'node:os';
import type { AgentHardwareT } from '../protocol/agent-protocol-schemas.js';
import type { PortRange } from './host-ports.js';
import {
  cudaForDriver, marketplaceGpuName, NvidiaSmiError, parseCudaVersion, parseGpuQuery, pcieBandwidth, queryArgs,
  QUERY_FIELDS, QUERY_FIELDS_WITHOUT_COMPUTE_CAP, type SmiGpu,
} from './nvidia-smi.js';

/** nvidia-smi may take seconds on a busy box (it initialises every GPU), but not forever. */
const NVIDIA_SMI_TIMEOUT_MS = 60_000;

export interface ExecResult {
  stdout: string;
  stderr: string;
  /** Exit status; null when the program could not be run at all (`notFound` says whether it is missing). */
  code: number | null;
  notFound: boolean;
}

export type Exec = (file: string, args: string[]) => Promise<ExecResult>;

/** Runs a program found on `env.PATH`, never through a shell. */
export const programRunner = (env: NodeJS.ProcessEnv = process.env): Exec => (file, args) =>
  new Promise((resolve) => {
    execFile(file, args, { env, timeout: NVIDIA_SMI_TIMEOUT_MS, maxBuffer: 4 * 1024 * 1024 }, (err, stdout, stderr) => {
      const e = err as (NodeJS.ErrnoException & { code?: string | number }) | null;
      resolve({
        stdout: String(stdout),
        stderr: String(stderr),
        code: e === null ? 0 : typeof e.code === 'number' ? e.code : null,
        notFound: e?.code === 'ENOENT',
      });
    });
  });

/** What the OS says of the host. */
export interface HostFacts {
  cpuName: string;
  cpuCores: number;
  cpuArch: string;
  ramMb: number;
  hostname: string;
  /** The first non-internal IPv4 address, the default `public_ipaddr`. */
  firstIpv4: string | null;
}

export function hostFacts(): HostFacts {
  const cpus = os.cpus();
  const ipv4 = Object.values(os.networkInterfaces())
    .flat()
    .find((a) => a && a.family === 'IPv4' && !a.internal);
  const arch: Record<string, string> = { x64: 'amd64', arm64: 'arm64' };
  return {
    cpuName: cpus[0]?.model.trim() || 'unknown CPU',
    cpuCores: Math.max(1, cpus.length),
    cpuArch: arch[process.arch] ?? process.arch,
    ramMb: Math.floor(os.totalmem() / (1024 * 1024)),
    hostname: os.hostname() || 'localhost',
    firstIpv4: ipv4?.address ?? null,
  };
}

/** Free space for unprivileged use at `path`, GB (10^9 bytes, as disks are sold), one decimal. */
export async function freeDiskGb(path: string): Promise<number> {
  const s = await statfs(path);
  return Math.floor((s.bavail * s.bsize) / 1e8) / 10;
}

export class DiscoveryError extends Error {}

export interface DiscoveredGpus {
  gpus: SmiGpu[];
  driver_version: string;
  cuda_max_good: number;
}

/** GPUs from `nvidia-smi` on PATH. */
export async function discoverGpus(exec: Exec = programRunner()): Promise<DiscoveredGpus> {
  let fields: readonly string[] = QUERY_FIELDS;
  let r = await exec('nvidia-smi', queryArgs(fields));
  if (r.notFound) {
    throw new DiscoveryError('nvidia-smi was not found on PATH: install the NVIDIA driver, or declare the hardware with --hardware FILE');
  }
  if (r.code !== 0 && /compute_cap/.test(r.stdout + r.stderr)) {
    // Drivers before 510 do not know the field and refuse the whole query.
    fields = QUERY_FIELDS_WITHOUT_COMPUTE_CAP;
    r = await exec('nvidia-smi', queryArgs(fields));
  }
  if (r.code !== 0) {
    const why = (r.stderr.trim() || r.stdout.trim()).split('\n')[0] || `exit status ${r.code}`;
    throw new DiscoveryError(`nvidia-smi failed: ${why}`);
  }
  let gpus: SmiGpu[];
  try {
    gpus = parseGpuQuery(r.stdout, fields);
  } catch (err) {
    if (err instanceof NvidiaSmiError) throw new DiscoveryError(err.message);
    throw err;
  }
  if (gpus.length === 0) throw new DiscoveryError('nvidia-smi lists no GPU');
  const driver = gpus[0].driver_version;
  const banner = await exec('nvidia-smi', []);
  const cuda = (banner.code === 0 ? parseCudaVersion(banner.stdout) : null) ?? cudaForDriver(driver);
  if (cuda === null) throw new DiscoveryError(`cannot tell the CUDA version of driver ${driver}`);
  return { gpus, driver_version: driver, cuda_max_good: cuda };
}

export interface AddressConfig {
  publicIp: string;
  portRange: PortRange;
}

const minOf = (xs: (number | null)[]): number | null => {
  const known = xs.filter((x): x is number => x !== null);
  return known.length ? Math.min(...known) : null;
};

/** The registration's `hardware` from discovered GPUs and host facts. */
export function discoveredHardware(d: DiscoveredGpus, host: HostFacts, diskGb: number, addr: AddressConfig): AgentHardwareT {
  const models = [...new Set(d.gpus.map((g) => marketplaceGpuName(g.name)))];
  if (models.length > 1) {
    throw new DiscoveryError(`this machine has GPUs of different models (${models.join(', ')}); a machine is offered as one model`);
  }
  const gpus = d.gpus.map(({ driver_version: _driver, ...g }) => g);
  const pciGen = minOf(gpus.map((g) => g.pci_gen));
  return {
    gpu_name: models[0],
    num_gpus: gpus.length,
    gpu_ram: minOf(gpus.map((g) => g.gpu_ram)) ?? 0,
    gpus,
    driver_version: d.driver_version,
    cuda_max_good: d.cuda_max_good,
    compute_cap: minOf(gpus.map((g) => g.compute_cap)),
    pci_gen: pciGen,
    pcie_bw: minOf(gpus.map((g) => pcieBandwidth(g.pci_gen, g.pcie_width))),
    gpu_max_power: minOf(gpus.map((g) => g.gpu_max_power)),
    cpu_name: host.cpuName,
    cpu_cores: host.cpuCores,
    cpu_arch: host.cpuArch,
    cpu_ram: host.ramMb,
    disk_space: diskGb,
    hostname: host.hostname.slice(0, 255),
    public_ipaddr: addr.publicIp,
    direct_port_start: addr.portRange.start,
    direct_port_end: addr.portRange.end,
    hardware_declared: false,
  };
}
