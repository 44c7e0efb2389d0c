/**
 * The container an instance gets: a pure function of its desired spec and the machine, so every rule (env, runtype,
 * GPUs, limits, ports, labels) is unit-tested without a runtime.
 */
import { createHash } from 'node:crypto';
import type { DesiredInstanceT } from '../protocol/agent-protocol-schemas.js';
import { onstartArgs } from './onstart-args.js';
import { volumeName } from './volumes.js';
import {
  LABEL_GENERATION, LABEL_INSTANCE, LABEL_MACHINE, LABEL_OWNER, LABEL_SSH_HOST_IP, LABEL_SSH_HOST_PORT,
  type ContainerSpec, type NetworkSpec,
} from './runtime.js';

/** The machine as the limits see it: the hardware sold, capped by what the host really has. */
export interface MachineLimits {
  machineId: number;
  /** The agent's owner id (owner.ts): on every container's labels and name. */
  owner: string;
  cpuCores: number;
  ramMb: number;
  /** Whether GPUs are passed as device requests (false on a host that declared its hardware: no NVIDIA runtime). */
  gpuDevices: boolean;
  /** @default PIDS_LIMIT_DEFAULT */
  pidsLimit?: number;
  /** @default LOG_MAX_SIZE_MB_DEFAULT */
  logMaxSizeMb?: number;
  /** @default LOG_MAX_FILES_DEFAULT */
  logMaxFiles?: number;
  /** The address renters reach the host at (the machine's `public_ipaddr`): the containers' `PUBLIC_IPADDR`. */
  publicIp?: string;
}

/**
 * What every container is told about itself (docs/spec/client-compat-connect.md, "The container's environment"; the
 * vastai client's serverless worker builds its public URL from `PUBLIC_IPADDR` and `VAST_TCP_PORT_<port>`): its
 * instance id, the host's public address, and the host port of each published TCP port; in a Jupyter runtype, the
 * instance's Jupyter token as `JUPYTER_TOKEN` (Vast.ai's documentation names it; Jupyter reads it as its token). They
 * are facts of the placement, so a renter's variable of the same name does not replace them: the token shown as the
 * instance's `jupyter_token` is the one Jupyter takes.
 */
export function placementEnv(
  instanceId: number, publicIp: string | undefined, ports: Record<string, { hostPort: number }>, jupyterToken?: string,
): [string, string][] {
  const env: [string, string][] = [['CONTAINER_ID', String(instanceId)]];
  if (publicIp !== undefined) env.push(['PUBLIC_IPADDR', publicIp]);
  for (const [port, { hostPort }] of Object.entries(ports)) {
    const [number, proto] = port.split('/');
    if (proto === 'tcp') env.push([`VAST_TCP_PORT_${number}`, String(hostPort)]);
  }
  if (jupyterToken !== undefined) env.push(['JUPYTER_TOKEN', jupyterToken]);
  return env;
}

/**
 * Processes and threads one container may hold (the pids cgroup counts threads too). A training job with data-loader
 * workers runs a few hundred; a fork bomb would take the host's whole pid space (issue 29 item 14). Operators change
 * it with `--pids-limit`.
 */
export const PIDS_LIMIT_DEFAULT = 4096;
/** A container's log rotates at this size (json-file `max-size`): a log flood never fills the host's disk. */
export const LOG_MAX_SIZE_MB_DEFAULT = 50;
/** Rotated log files kept (json-file `max-file`): `request_logs` reads at most these files' worth. */
export const LOG_MAX_FILES_DEFAULT = 3;

/**
 * The only capabilities a container keeps (every other one is dropped, issue 29 item 13), each for what a rented
 * machine runs: package managers and images' entrypoints as root (CHOWN, DAC_OVERRIDE, FOWNER, FSETID), sshd and
 * tools that drop to a user (SETUID, SETGID), sshd's privilege separation (SYS_CHROOT), signals to one's own processes
 * (KILL), and sshd or Jupyter on ports below 1024 (NET_BIND_SERVICE). Dropped from Docker's defaults: NET_RAW (raw
 * sockets: ARP and IP spoofing on a bridge; `ping` fails), MKNOD (device nodes), AUDIT_WRITE (the host's audit log),
 * SETFCAP and SETPCAP (granting file capabilities; moot under no-new-privileges, dropped anyway). A GPU needs none:
 * the NVIDIA runtime passes its device nodes in.
 */
export const KEPT_CAPABILITIES: readonly string[] = Object.freeze([
  'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'SETUID', 'SETGID', 'SYS_CHROOT', 'KILL', 'NET_BIND_SERVICE',
]);

/** Every instance network's host interface starts with this: the host firewall rule (host-firewall.ts) names it. */
export const BRIDGE_PREFIX = 'gpb';
/** Linux interface names hold at most 15 characters. */
const IFNAME_MAX = 15;

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

/**
 * `gpuplane-<machine>-<instance>-<owner>`: the owner keeps two agents on one daemon from fighting over a name (the
 * simulated runtime, src/emulator/simulated-hosts/, has no owner and names its containers without one).
 */
export function containerName(machineId: number, instanceId: number, owner: string | null = null): string {
  return `gpuplane-${machineId}-${instanceId}${owner === null ? '' : `-${owner}`}`;
}

/** The instance's own network: named as its container, labelled as it (without the generation: it outlives one). */
export function instanceNetwork(m: Pick<MachineLimits, 'machineId' | 'owner'>, instanceId: number): NetworkSpec {
  const name = containerName(m.machineId, instanceId, m.owner);
  const digest = createHash('sha256').update(name).digest('hex');
  return {
    name,
    bridge: `${BRIDGE_PREFIX}${digest.slice(0, IFNAME_MAX - BRIDGE_PREFIX.length)}`,
    labels: { [LABEL_MACHINE]: String(m.machineId), [LABEL_OWNER]: m.owner, [LABEL_INSTANCE]: String(instanceId) },
  };
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

/** The container port of SSH. */
export const SSH_PORT = '22/tcp';

/** Single-quotes a value for /bin/sh. */
export function shQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The container port Jupyter listens on (the spec's `jupyter_direct` publishes 8080; ports-contract JUPYTER_PORT). */
export const JUPYTER_CONTAINER_PORT = 8080;
/**
 * Where Jupyter starts when the renter names no `jupyter_dir`: root's home, where an SSH session starts and onstart.sh
 * is written (the entrypoint makes it, so it is there in any image). A renter who wants the whole file system in
 * Jupyter's file browser names `/`.
 */
export const JUPYTER_DIR_DEFAULT = '/root';
/** The message in the container log, and the one the agent reports (jupyter-probe.ts), when an image has no Jupyter. */
export const JUPYTER_MISSING_LOG = 'gpuplane: Jupyter is not installed in this image (no `jupyter` on PATH); SSH and onstart run';

/** How the entrypoint starts Jupyter: `jupyter lab` or `jupyter notebook`, serving `dir`. */
export interface JupyterStart {
  lab: boolean;
  /** Absolute. */
  dir: string;
}

/**
 * What a `jupyter` instance's entrypoint starts, or null for other runtypes. A relative `jupyter_dir` is taken from `/`
 * (the entrypoint's own working directory is the image's, which the renter may not know).
 */
export function jupyterStart(d: Pick<DesiredInstanceT, 'runtype' | 'use_jupyter_lab' | 'jupyter_dir'>): JupyterStart | null {
  if (d.runtype !== 'jupyter') return null;
  const given = d.jupyter_dir ?? '';
  const dir = given === '' ? JUPYTER_DIR_DEFAULT : given.startsWith('/') ? given : `/${given}`;
  return { lab: d.use_jupyter_lab === true, dir };
}

/**
 * Jupyter's command line: on all the container's addresses at port 8080 (published, or reached through the server's
 * port URL), no browser, as root (the container's user), serving `dir`. The token is not on it: Jupyter Server (Lab,
 * Notebook 7) and Notebook 6 both take `JUPYTER_TOKEN` from the environment as their token (IdentityProvider.token and
 * NotebookApp.token default to it), where the option's class differs between them, and an argument is in every
 * process listing. `--notebook-dir` is the root directory's alias in both.
 */
export function jupyterArgv(j: JupyterStart): string[] {
  return [
    'jupyter', j.lab ? 'lab' : 'notebook',
    '--ip=0.0.0.0', `--port=${JUPYTER_CONTAINER_PORT}`, '--no-browser', '--allow-root', `--notebook-dir=${j.dir}`,
  ];
}

/**
 * The entrypoint's lines that start Jupyter in the background when the image has a `jupyter` on its PATH, in `dir`
 * (made when missing) and in a subshell, so the entrypoint's own directory stays the image's. Its output goes to the
 * container log. Without one, the log says so (and the agent reports it: jupyter-probe.ts). Every word is quoted:
 * `dir` is the renter's text, and nothing in it may run.
 */
export function jupyterLines(j: JupyterStart): string[] {
  const dir = shQuote(j.dir);
  return [
    'if command -v jupyter >/dev/null 2>&1; then',
    `  ( mkdir -p -- ${dir} && cd -- ${dir} && exec ${jupyterArgv(j).map(shQuote).join(' ')} ) &`,
    'else',
    `  echo ${shQuote(JUPYTER_MISSING_LOG)} >&2`,
    'fi',
  ];
}

/**
 * The entrypoint of `ssh` and `jupyter` instances: keys into authorized_keys, sshd when the image has one, Jupyter
 * (`jupyter` instances: `jupyterLines`), onstart in the background (its output in the container log), then wait
 * forever. The shell traps TERM so a stop is prompt, and waits on a background `sleep` so the trap runs at once. The
 * onstart script itself comes as the shell's positional parameters (`onstartArgs`, onstart-args.ts: a long one does
 * not fit in one argument).
 */
export function keepAliveScript(sshKeys: string[], onstart: string | null, jupyter: JupyterStart | null = null): string {
  const lines = ['mkdir -p /root/.ssh && chmod 700 /root/.ssh'];
  if (sshKeys.length > 0) {
    lines.push(`printf '%s\\n' ${sshKeys.map((k) => shQuote(k.trim())).join(' ')} > /root/.ssh/authorized_keys`);
    lines.push('chmod 600 /root/.ssh/authorized_keys');
  }
  lines.push('if command -v sshd >/dev/null 2>&1; then ssh-keygen -A >/dev/null 2>&1; mkdir -p /run/sshd; "$(command -v sshd)"; fi');
  if (jupyter) lines.push(...jupyterLines(jupyter));
  lines.push("trap 'exit 0' TERM INT");
  if (onstart !== null && onstart.trim() !== '') {
    lines.push(`printf '%s' "$@" > /root/onstart.sh && echo >> /root/onstart.sh`);
    lines.push('sh /root/onstart.sh & wait $!');
  }
  lines.push('while :; do sleep 3600 & wait $!; done');
  return lines.join('\n');
}

/** The renter's variables, less any named as a placement fact, then the placement's. */
function withPlacement(vars: [string, string][], placement: [string, string][]): [string, string][] {
  const facts = new Set(placement.map(([k]) => k));
  return [...vars.filter(([k]) => !facts.has(k)), ...placement];
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
  const jupyter = jupyterStart(d);
  const token = jupyter ? d.jupyter_token : undefined;
  const env = withPlacement(vars, placementEnv(d.instance_id, m.publicIp, ports, token)).map(([k, v]) => `${k}=${v}`);
  // An SSH instance's 22/tcp is the agent's to hold (direct-ssh.ts), not Docker's: so an image without sshd is
  // reachable directly too. Its host port stays reserved through the labels.
  const sshLabels: Record<string, string> = {};
  const ssh = ports[SSH_PORT];
  if (keepAlive && ssh) {
    delete ports[SSH_PORT];
    sshLabels[LABEL_SSH_HOST_IP] = ssh.hostIp;
    sshLabels[LABEL_SSH_HOST_PORT] = String(ssh.hostPort);
  }
  return {
    name: containerName(m.machineId, d.instance_id, m.owner),
    image: d.image,
    labels: {
      [LABEL_MACHINE]: String(m.machineId),
      [LABEL_OWNER]: m.owner,
      [LABEL_INSTANCE]: String(d.instance_id),
      [LABEL_GENERATION]: String(d.generation),
      ...sshLabels,
    },
    env,
    // After the script: `$0`, then the onstart in pieces as `$1`… (onstart-args.ts).
    entrypoint: keepAlive ? ['/bin/sh', '-c', keepAliveScript(d.ssh_keys, d.onstart, jupyter), 'sh', ...onstartArgs(d.onstart)] : null,
    // An entrypoint replaced by ours runs with no command; `args` keeps the image's entrypoint and replaces its command.
    cmd: keepAlive ? [] : d.args,
    hostname: d.hostname ?? envHostname,
    gpuDeviceIds: m.gpuDevices && d.gpu_indices.length > 0 ? [...d.gpu_indices].sort((a, b) => a - b).map(String) : null,
    nanoCpus: Math.max(MIN_NANO_CPUS, Math.floor(m.cpuCores * d.cpu_share * 1e9)),
    cpuShares: Math.max(MIN_CPU_SHARES, Math.round(FULL_CPU_SHARES * d.cpu_share)),
    memoryBytes: Math.max(MIN_MEMORY_BYTES, Math.floor(m.ramMb * d.memory_share * 1024 * 1024)),
    diskGb: d.disk,
    ports,
    network: instanceNetwork(m, d.instance_id),
    pidsLimit: m.pidsLimit ?? PIDS_LIMIT_DEFAULT,
    log: { maxSizeMb: m.logMaxSizeMb ?? LOG_MAX_SIZE_MB_DEFAULT, maxFiles: m.logMaxFiles ?? LOG_MAX_FILES_DEFAULT },
    capabilities: [...KEPT_CAPABILITIES],
    // The machine's volumes it mounts (volumes.ts makes them first).
    ...(d.mounts?.length ? { mounts: d.mounts.map((v) => ({ volume: volumeName(m, v.volume_id), target: v.mount_path })) } : {}),
  };
}
