/**
 * The instance object as the API shows it (spec: Instance; client-compat: Instances). Every field the vastai client
 * prints is present with the type it needs; `start_date` and `extra_env` always.
 */
import type { MachineInfo } from '../machines/machines-contract.js';
import { toDollars } from '../platform/money.js';
import { gatewayPorts, type GatewayAddressing } from '../gateway/gateway-contract.js';
import { portUrls, type PortUrlAddressing } from '../ports/ports-contract.js';
import type { SecretBox } from '../platform/crypto.js';
import { jupyterTokenOf, jupyterUrl } from './instances-jupyter.js';
import type { InstanceRow } from './instances-store.js';
import { instanceGpuFields, withGpuFault, type InstanceGpuState } from './instances-gpu-view.js'; // issue 33 (telemetry)

export type InstanceObject = Record<string, unknown> & { id: number; actual_status: string | null; start_date: number; extra_env: string[][] };

const num = (v: unknown, fallback = 0): number => (typeof v === 'number' && Number.isFinite(v) ? v : fallback);
const str = (v: unknown): string | null => (typeof v === 'string' ? v : v === undefined || v === null ? null : String(v));

/**
 * A live instance's status message names its machine's next maintenance window (or the one under way), so renters
 * see planned downtime where they look (client-compat-more §a: "notify by instance status message").
 */
function withMaintenance(inst: InstanceRow, machine: MachineInfo | undefined, now: number): string | null {
  const w = inst.destroyed_at === null ? machine?.maint.find((m) => m.end > now) : undefined;
  if (!w) return inst.status_msg;
  const when = new Date(w.start * 1000).toISOString().replace('.000Z', 'Z');
  const note = `${w.start <= now ? 'host maintenance under way since' : 'host maintenance scheduled at'} ${when} for ${w.hours} hours (${w.category})`;
  return inst.status_msg ? `${inst.status_msg}; ${note}` : note;
}

/**
 * `ssh_host`/`ssh_port` of a running instance: a direct runtype's published port 22 on its machine's address, else its
 * ports at the SSH gateway (src/gateway/gateway-contract.ts; the vastai client adds 1 for Jupyter runtypes itself).
 * `secrets` opens a Jupyter instance's token (`jupyter_token`, `jupyter_url`); null: the caller may not see it
 * (instances-jupyter.ts `mayOpenJupyter`), and both are null.
 */
export function toInstanceObject(
  inst: InstanceRow, machine: MachineInfo | undefined, now: number, gateway: GatewayAddressing & PortUrlAddressing,
  secrets: Pick<SecretBox, 'open'> | null = null,
  /** Issue 33 (telemetry): the machine's GPUs as its agent last sampled them; null: none (simulated machines). */
  gpu: InstanceGpuState | null = null,
): InstanceObject {
  const offer = JSON.parse(inst.offer_snapshot) as Record<string, unknown>;
  const options = JSON.parse(inst.options) as Record<string, unknown>;
  const env = JSON.parse(inst.env) as Record<string, string>;
  const ports = inst.ports ? (JSON.parse(inst.ports) as Record<string, { HostIp: string; HostPort: string }[]>) : {};
  const running = inst.actual_status === 'running';
  const direct = inst.runtype === 'ssh_direct' || inst.runtype === 'jupyter_direct';
  const hasSsh = inst.runtype !== 'args';
  let sshHost: string | null = null;
  let sshPort: number | null = null;
  if (running && hasSsh && machine) {
    if (direct && ports['22/tcp']) {
      sshHost = machine.public_ipaddr;
      sshPort = Number(ports['22/tcp'][0].HostPort);
    } else {
      const at = gatewayPorts(gateway, inst.id, inst.runtype);
      sshHost = at?.ssh_host ?? null;
      sshPort = at?.ssh_port ?? null;
    }
  }
  const urls = running ? portUrls(gateway, inst.id, inst.runtype, Object.keys(ports)) : {};
  const jupyterToken = secrets ? jupyterTokenOf(inst, secrets) : null;
  const gpuNow = instanceGpuFields(inst, running, gpu); // issue 33 (telemetry)
  const dph = toDollars(inst.gpu_rate_micro + inst.disk_rate_micro);
  const extraEnv = Object.entries(env).map(([k, v]) => [k, v] as [string, string]);
  return {
    id: inst.id,
    machine_id: inst.machine_id,
    host_id: inst.host_id,
    actual_status: inst.actual_status,
    intended_status: inst.intended_status,
    cur_state: running ? 'running' : 'stopped',
    next_state: inst.intended_status === 'running' ? 'running' : 'stopped',
    status_msg: withGpuFault(withMaintenance(inst, machine, now), gpuNow.fault),
    label: inst.label,
    num_gpus: inst.num_gpus,
    gpu_name: str(offer.gpu_name),
    gpu_ram: num(offer.gpu_ram),
    // Issue 33 (telemetry): the instance's own GPUs, sampled by the host's agent (instances-gpu-view.ts).
    gpu_util: gpuNow.gpu_util,
    gpu_temp: gpuNow.gpu_temp,
    vmem_usage: gpuNow.vmem_usage,
    gpu_mem_bw: num(offer.gpu_mem_bw),
    cpu_name: str(offer.cpu_name),
    cpu_cores_effective: num(offer.cpu_cores_effective),
    cpu_ram: num(offer.cpu_ram),
    disk_space: inst.disk,
    disk_util: 0,
    ssh_host: sshHost,
    ssh_port: sshPort,
    ssh_idx: sshPort === null ? null : String(sshPort),
    public_ipaddr: running && machine ? machine.public_ipaddr : null,
    ports: running ? ports : {},
    // Issue 32: each web port through the server (src/ports/ports-contract.ts), for as long as the instance runs.
    port_urls: urls,
    // Issue 32: a Jupyter runtype's token, and where to open it with the token while it runs (instances-jupyter.ts).
    jupyter_token: jupyterToken,
    jupyter_url: running ? jupyterUrl(inst.runtype, jupyterToken, { publicIp: machine?.public_ipaddr ?? null, ports, portUrls: urls }) : null,
    dph_total: dph,
    dph_base: toDollars(inst.gpu_rate_micro),
    storage_cost: machine ? toDollars(machine.price_disk_micro) : null,
    is_bid: inst.is_bid === 1,
    min_bid: machine ? toDollars(machine.min_bid_micro * inst.num_gpus) : null,
    bid_price: inst.bid_per_gpu_micro === null ? null : toDollars(inst.bid_per_gpu_micro * inst.num_gpus),
    image_uuid: inst.image,
    image_args: inst.args_str ? [inst.args_str] : [],
    image_runtype: inst.runtype,
    onstart: inst.onstart,
    jupyter_dir: inst.jupyter_dir,
    use_jupyter_lab: inst.use_jupyter_lab === 1,
    vm: inst.vm === 1,
    template_id: inst.template_id,
    template_hash_id: inst.template_hash_id,
    inet_up: num(offer.inet_up),
    inet_down: num(offer.inet_down),
    // Issue 33 (telemetry): an agent machine's reliability2 as measured now; the rented offer's otherwise.
    reliability2: machine?.agent ? machine.reliability : num(offer.reliability, 1),
    geolocation: str(offer.geolocation),
    cuda_max_good: num(offer.cuda_max_good),
    driver_version: str(offer.driver_version),
    verification: str(offer.verification) ?? 'verified',
    direct_port_count: num(offer.direct_port_count),
    start_date: inst.created_at,
    uptime_mins: running && inst.running_since !== null ? Math.max(0, (now - inst.running_since) / 60) : 0,
    extra_env: extraEnv,
    hostname: inst.hostname,
    python_utf8: options.python_utf8 === true,
    lang_utf8: options.lang_utf8 === true,
    volume_info: inst.volume_info ? JSON.parse(inst.volume_info) : null,
  };
}
