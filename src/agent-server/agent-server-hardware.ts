/**
 * A real host's reported hardware (the protocol's AgentHardware, offer field names and units) as a fleet machine.
 * What the agent cannot measure (memory bandwidth, TFLOPS, DL performance, NVLink) comes from the catalogue's entry
 * for the GPU model when there is one, else 0.
 */
import type { AgentHardwareT } from '../protocol/agent-protocol-schemas.js';
import { GPU_MODELS, type MachineSpec, type NewMachine } from '../machines/machines-contract.js';

/** A new machine is priced like its model's typical marketplace price until its host lists it with prices. */
const FALLBACK_PRICE_MICRO = 100_000;

export function specOf(hw: AgentHardwareT): MachineSpec {
  const model = GPU_MODELS.find((m) => m.name.toLowerCase() === hw.gpu_name.toLowerCase());
  return {
    gpu_ram: hw.gpu_ram,
    gpu_mem_bw: model?.gpu_mem_bw ?? 0,
    gpu_max_power: hw.gpu_max_power ?? model?.gpu_max_power ?? 0,
    gpu_max_temp: 0,
    gpu_arch: 'nvidia',
    gpu_display_active: false,
    compute_cap: hw.compute_cap ?? model?.compute_cap ?? 0,
    tflops_per_gpu: model?.tflops ?? 0,
    dlperf_per_gpu: model?.dlperf ?? 0,
    bw_nvlink: model?.bw_nvlink ?? 0,
    pci_gen: hw.pci_gen ?? 0,
    pcie_bw: hw.pcie_bw ?? 0,
    cpu_name: hw.cpu_name,
    cpu_arch: hw.cpu_arch,
    cpu_cores: hw.cpu_cores,
    cpu_ghz: 0,
    cpu_ram: hw.cpu_ram,
    has_avx: hw.cpu_arch === 'amd64',
    mobo_name: '',
    disk_space: hw.disk_space,
    disk_bw: 0,
    disk_name: '',
    inet_up: 0,
    inet_down: 0,
    driver_version: hw.driver_version,
    cuda_max_good: hw.cuda_max_good,
    ubuntu_version: '',
    reliability: 1,
    geolocation: '',
    datacenter: false,
    static_ip: false,
    external: false,
    cluster_id: null,
    reserved_discount: 0,
    agent: true,
    hardware_declared: hw.hardware_declared,
    // Absent (an agent before it): unknown, shown as null.
    ...(hw.disk_limit !== undefined ? { disk_limit: hw.disk_limit } : {}),
  };
}

export function machineFromHardware(hw: AgentHardwareT): Omit<NewMachine, 'verification' | 'listed_for'> {
  const model = GPU_MODELS.find((m) => m.name.toLowerCase() === hw.gpu_name.toLowerCase());
  const price = model ? Math.round(model.price * 1e6) : FALLBACK_PRICE_MICRO;
  return {
    gpu_name: hw.gpu_name,
    num_gpus: hw.num_gpus,
    price_gpu_micro: price,
    price_disk_micro: 100_000,
    price_inetu_micro: 0,
    price_inetd_micro: 0,
    min_bid_micro: Math.round(price / 2),
    public_ipaddr: hw.public_ipaddr,
    direct_port_start: hw.direct_port_start,
    direct_port_count: hw.direct_port_end - hw.direct_port_start + 1,
    vms_enabled: false,
    spec: specOf(hw),
  };
}

/** Where the machine is reached: its address and its port range. */
export function networkPatch(hw: AgentHardwareT) {
  return {
    public_ipaddr: hw.public_ipaddr,
    direct_port_start: hw.direct_port_start,
    direct_port_count: Math.max(0, hw.direct_port_end - hw.direct_port_start + 1),
  };
}

/** The fleet columns a hardware report rewrites (the GPU count and the prices stay). */
export function hardwarePatch(hw: AgentHardwareT) {
  return { ...networkPatch(hw), gpu_name: hw.gpu_name, spec: specOf(hw) };
}
