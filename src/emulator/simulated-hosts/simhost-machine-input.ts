/**
 * `POST /_emu/machines`: a machine from the body's offer fields and prices, every omitted field taken from the
 * catalogue (the GPU model's real VRAM, bandwidth and price; typical hardware drawn deterministically from the seed).
 */
import { toMicro } from '../../platform/money.js';
import { SeededRandom } from '../../platform/random.js';
import { DRIVERS, GPU_MODELS, machineOf, type NewMachine } from '../../machines/machines-contract.js';
import { EMU_MACHINE_DEFAULTS as D, type NewMachineInput } from '../emulator-schemas.js';

export function machineFromInput(input: NewMachineInput, seed: number, n: number): NewMachine {
  const name = input.gpu_name ?? D.gpu_name;
  // An unknown model gets the default model's hardware under its own name.
  const model = GPU_MODELS.find((m) => m.name.toLowerCase() === name.toLowerCase()) ?? GPU_MODELS.find((m) => m.name === D.gpu_name)!;
  const base = machineOf(new SeededRandom((seed + n * 7919) >>> 0), model, n);
  const num_gpus = input.num_gpus ?? D.num_gpus;
  const price = input.price_gpu ?? model.price;
  const driver = input.driver_version ?? base.spec.driver_version;
  const cuda = input.cuda_max_good ?? DRIVERS.find((d) => d.version === driver)?.cuda ?? base.spec.cuda_max_good;
  const s = base.spec;
  return {
    verification: (input.verified ?? D.verified) ? 'verified' : 'unverified',
    gpu_name: model.name.toLowerCase() === name.toLowerCase() ? model.name : name,
    num_gpus,
    price_gpu_micro: toMicro(price),
    price_disk_micro: toMicro(input.price_disk ?? D.price_disk),
    price_inetu_micro: toMicro(input.price_inetu ?? D.price_inet),
    price_inetd_micro: toMicro(input.price_inetd ?? D.price_inet),
    min_bid_micro: toMicro(input.min_bid ?? price * D.min_bid_ratio),
    public_ipaddr: input.public_ipaddr ?? base.public_ipaddr,
    direct_port_start: base.direct_port_start,
    direct_port_count: input.direct_port_count ?? D.direct_port_count,
    vms_enabled: input.vms_enabled ?? base.vms_enabled,
    listed_for: input.duration ?? D.duration,
    spec: {
      ...s,
      gpu_ram: input.gpu_ram ?? s.gpu_ram,
      gpu_mem_bw: input.gpu_mem_bw ?? s.gpu_mem_bw,
      gpu_max_power: input.gpu_max_power ?? s.gpu_max_power,
      gpu_max_temp: input.gpu_max_temp ?? s.gpu_max_temp,
      gpu_display_active: input.gpu_display_active ?? s.gpu_display_active,
      compute_cap: input.compute_cap ?? s.compute_cap,
      bw_nvlink: input.bw_nvlink ?? s.bw_nvlink,
      pci_gen: input.pci_gen ?? s.pci_gen,
      pcie_bw: input.pcie_bw ?? s.pcie_bw,
      cpu_name: input.cpu_name ?? s.cpu_name,
      cpu_arch: input.cpu_arch ?? s.cpu_arch,
      cpu_cores: input.cpu_cores ?? s.cpu_cores,
      cpu_ghz: input.cpu_ghz ?? s.cpu_ghz,
      // A machine's RAM and disk scale with its GPUs unless given.
      cpu_ram: input.cpu_ram ?? (s.cpu_ram / base.num_gpus) * num_gpus,
      has_avx: input.has_avx ?? s.has_avx,
      mobo_name: input.mobo_name ?? s.mobo_name,
      disk_space: input.disk_space ?? Math.max(s.disk_space, 250 * num_gpus),
      disk_bw: input.disk_bw ?? s.disk_bw,
      inet_up: input.inet_up ?? s.inet_up,
      inet_down: input.inet_down ?? s.inet_down,
      driver_version: driver,
      cuda_max_good: cuda,
      ubuntu_version: input.ubuntu_version ?? s.ubuntu_version,
      reliability: input.reliability ?? D.reliability,
      geolocation: input.geolocation ?? s.geolocation,
      datacenter: input.datacenter ?? s.datacenter,
      static_ip: input.static_ip ?? s.static_ip,
      external: input.external ?? false,
      cluster_id: input.cluster_id === undefined ? null : input.cluster_id,
    },
  };
}
