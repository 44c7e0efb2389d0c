/**
 * The container an instance gets: a pure function of its desired spec and the machine, so every rule (env, runtype,
 * GPUs, limits, ports, labels) is unit-tested without a runtime.
 */
import type { DesiredInstanceT } from '../fleet/agent-protocol-schemas.js';
import { LABEL_GENERATION, LABEL_INSTANCE, LABEL_MACHINE, type ContainerSpec } from './runtime.js';

/** The machine as the limits see it: the hardware sold, capped by what the host really has. */
export interface MachineLimits {
  machineId: number;
  cpuCores: number;
  ramMb: number;
  /** Whether GPUs are passed as device requests (false on a host that declared its hardware: no NVIDIA runtime). */
  gpuDevices: boolean;
}

/** Docker refuses a memory limit under 6 MB. */
const MIN_MEMORY_BYTES = 6 * 1024 * 1024;
/** Docker's smallest CPU quota: 0.01 CPU. */
const MIN_NANO_CPUS = 10_000_000;
/** Docker's CPU weight of a container with no setting; a whole machine's share gets this much. */
const FULL_CPU_SHARES = 1024;
/** Docker's smallest CPU weight. */
const MIN_CPU_SHARES = 2;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** `-p HOST:CONTAINER[/proto]` (the spec's port key). The host part is ignored: host ports come from the range. */
const PORT_KEY = /^-p\s+(?:\d{1,5}:)?(\d{1,5})(?:\/(tcp|udp))?$/;

export function containerName(machineId: number, instanceId: number): string {
  return `gpuplane-${machineId}-${instanceId}`;
}

/**
 * Splits the desired env into variables and the ports it asks for. The server sends variables only; a `-p` key (the
 * spec's form) is still read as a port and `-h` as the hostname, and any other key that is not a variable name is
 * dropped, since Docker would refuse it or read it as something else.
 */
export function splitEnv(env: Record<string, string>): { vars: [string, string][]; ports: string[]; hostname: string | null } {
  const vars: [string, string][] = [];
  const ports: string[] = [];
  let hostname: string | null = null;
  for (const [key, value] of Object.entries(env)) {
    const port = PORT_KEY.exec(key.trim());
    if (port) ports.push(`${Number(port[1])}/${port[2] ?? 'tcp'}`);
    else if (key === '-h' || key === '--hostname') hostname = value;
    else if (ENV_NAME.test(key)) vars.push([key, value]);
  }
  return { vars, ports, hostname };
}

/** Every container port the instance publishes, each once, in a stable order. */
export function wantedPorts(d: Pick<DesiredInstanceT, 'ports' | 'env'>): string[] {
  return [...new Set([...d.ports, ...splitEnv(d.env).ports])].sort();
}

/** Single-quotes a value for /bin/sh. */
export function shQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * The entrypoint of `ssh` and `jupyter` instances: keys into authorized_keys, sshd when the image has one, onstart in
 * the background (its output in the container log), then wait forever. The shell traps TERM so a stop is prompt, and
 * waits on a background `sleep` so the trap runs at once.
 */
export function keepAliveScript(sshKeys: string[], onstart: string | null): string {
  const lines = ['mkdir -p /root/.ssh && chmod 700 /root/.ssh'];
  if (sshKeys.length > 0) {
    lines.push(`printf '%s\\n' ${sshKeys.map((k) => shQuote(k.trim())).join(' ')} > /root/.ssh/authorized_keys`);
    lines.push('chmod 600 /root/.ssh/authorized_keys');
  }
  lines.push('if command -v sshd >/dev/null 2>&1; then ssh-keygen -A >/dev/null 2>&1; mkdir -p /run/sshd; "$(command -v sshd)"; fi');
  lines.push("trap 'exit 0' TERM INT");
  if (onstart !== null && onstart.trim() !== '') {
    lines.push(`printf '%s\\n' ${shQuote(onstart)} > /root/onstart.sh`);
    lines.push('sh /root/onstart.sh & wait $!');
  }
  lines.push('while :; do sleep 3600 & wait $!; done');
  return lines.join('\n');
}

/**
 * The container for `d` on this machine, with its ports on `hostPorts` (container port → host port, one for each of
 * `wantedPorts(d)`) bound on `publishIp`.
 */
export function buildContainerSpec(d: DesiredInstanceT, m: MachineLimits, hostPorts: Record<string, number>, publishIp: string): ContainerSpec {
  const { vars, hostname: envHostname } = splitEnv(d.env);
  const ports: ContainerSpec['ports'] = {};
  for (const p of wantedPorts(d)) {
    const hostPort = hostPorts[p];
    if (hostPort === undefined) throw new Error(`no host port chosen for ${p}`);
    ports[p] = { hostIp: publishIp, hostPort };
  }
  const keepAlive = d.runtype === 'ssh' || d.runtype === 'jupyter';
  return {
    name: containerName(m.machineId, d.instance_id),
    image: d.image,
    labels: {
      [LABEL_MACHINE]: String(m.machineId),
      [LABEL_INSTANCE]: String(d.instance_id),
      [LABEL_GENERATION]: String(d.generation),
    },
    env: vars.map(([k, v]) => `${k}=${v}`),
    entrypoint: keepAlive ? ['/bin/sh', '-c', keepAliveScript(d.ssh_keys, d.onstart)] : null,
    // An entrypoint replaced by ours runs with no command; `args` keeps the image's entrypoint and replaces its command.
    cmd: keepAlive ? [] : d.args,
    hostname: d.hostname ?? envHostname,
    gpuDeviceIds: m.gpuDevices && d.gpu_indices.length > 0 ? [...d.gpu_indices].sort((a, b) => a - b).map(String) : null,
    nanoCpus: Math.max(MIN_NANO_CPUS, Math.floor(m.cpuCores * d.cpu_share * 1e9)),
    cpuShares: Math.max(MIN_CPU_SHARES, Math.round(FULL_CPU_SHARES * d.cpu_share)),
    memoryBytes: Math.max(MIN_MEMORY_BYTES, Math.floor(m.ramMb * d.memory_share * 1024 * 1024)),
    diskGb: d.disk,
    ports,
  };
}
