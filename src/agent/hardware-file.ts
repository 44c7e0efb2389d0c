/**
 * `--hardware FILE`: the host declares its hardware in the offer's field names instead of discovery (hosts without
 * NVIDIA GPUs, tests). The GPU model, count, VRAM, driver and CUDA version must be given; CPU, RAM, host name and disk
 * come from the host unless the file says otherwise. Unknown keys are refused, so a typo is not silently dropped.
 */
import { readFileSync } from 'node:fs';
import { Compile } from 'typebox/compile';
import { Type } from 'typebox';
import { AgentHardware, type AgentGpuT, type AgentHardwareT } from '../protocol/agent-protocol-schemas.js';
import type { AddressConfig, HostFacts } from './hardware.js';

export const DECLARED_REQUIRED = ['gpu_name', 'num_gpus', 'gpu_ram', 'driver_version', 'cuda_max_good'] as const;

/** What the agent finds out itself, whatever a file says: that it was declared, and whether disk limits hold. */
const MEASURED = ['hardware_declared', 'disk_limit'] as const;

/** Every field of the protocol's hardware but the measured ones, each optional. */
const DeclaredHardware = Compile(Type.Partial(Type.Omit(AgentHardware, MEASURED), { additionalProperties: false }));

export class HardwareFileError extends Error {}

/** Reads and checks the file; the declared fields, as given. */
export function readHardwareFile(path: string): Partial<AgentHardwareT> {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new HardwareFileError(`--hardware ${path}: ${(err as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new HardwareFileError(`--hardware ${path}: a JSON object of offer fields is expected`);
  }
  const allowed = Object.keys(AgentHardware.properties).filter((k) => !(MEASURED as readonly string[]).includes(k));
  const unknownKey = Object.keys(value).find((k) => !allowed.includes(k));
  if (unknownKey !== undefined) {
    throw new HardwareFileError(`--hardware ${path}: unknown field ${JSON.stringify(unknownKey)} (fields: ${allowed.join(', ')})`);
  }
  const missing = DECLARED_REQUIRED.filter((k) => (value as Record<string, unknown>)[k] === undefined);
  if (missing.length) throw new HardwareFileError(`--hardware ${path}: missing ${missing.join(', ')}`);
  const firstError = [...DeclaredHardware.Errors(value)][0];
  if (firstError) {
    throw new HardwareFileError(`--hardware ${path}: ${firstError.instancePath.replace(/^\//, '').replace(/\//g, '.') || 'value'} ${firstError.message}`);
  }
  return value as Partial<AgentHardwareT>;
}

/** The registration's `hardware`: the file's fields, the host's for the rest, the configuration's address. */
export function declaredHardware(file: Partial<AgentHardwareT>, host: HostFacts, diskGb: number, addr: AddressConfig): AgentHardwareT {
  const numGpus = file.num_gpus!;
  const gpus: AgentGpuT[] = file.gpus ?? Array.from({ length: numGpus }, (_, index) => ({
    index,
    name: file.gpu_name!,
    uuid: null,
    gpu_ram: file.gpu_ram!,
    pci_gen: file.pci_gen ?? null,
    pcie_width: null,
    gpu_max_power: file.gpu_max_power ?? null,
    compute_cap: file.compute_cap ?? null,
  }));
  if (gpus.length !== numGpus) throw new HardwareFileError(`the hardware file lists ${gpus.length} gpus but num_gpus is ${numGpus}`);
  return {
    gpu_name: file.gpu_name!,
    num_gpus: numGpus,
    gpu_ram: file.gpu_ram!,
    gpus,
    driver_version: file.driver_version!,
    cuda_max_good: file.cuda_max_good!,
    compute_cap: file.compute_cap ?? null,
    pci_gen: file.pci_gen ?? null,
    pcie_bw: file.pcie_bw ?? null,
    gpu_max_power: file.gpu_max_power ?? null,
    cpu_name: file.cpu_name ?? host.cpuName,
    cpu_cores: file.cpu_cores ?? host.cpuCores,
    cpu_arch: file.cpu_arch ?? host.cpuArch,
    cpu_ram: file.cpu_ram ?? host.ramMb,
    disk_space: file.disk_space ?? diskGb,
    hostname: file.hostname ?? host.hostname.slice(0, 255),
    public_ipaddr: addr.publicIp,
    direct_port_start: addr.portRange.start,
    direct_port_end: addr.portRange.end,
    hardware_declared: true,
  };
}
