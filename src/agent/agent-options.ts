/**
 * The agent's settings from its flags and environment: each flag mirrors a variable, and the flag wins. Checked here,
 * before anything starts, so a mistake is a usage error naming the setting.
 */
import { isIPv4 } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { AgentConfig } from './agent.js';
import { parsePortRange } from './host-ports.js';

export class AgentUsageError extends Error {}

/** The flags the command takes, as Commander hands them over (`--url` and `--api-key` are the CLI's global options). */
export interface AgentFlags {
  url?: string;
  apiKey?: string;
  stateDir?: string;
  runtime?: string;
  hardware?: string;
  publicIp?: string;
  portRange?: string;
  publishIp?: string;
  heartbeatInterval?: string;
  resyncInterval?: string;
  /** Issue 33: seconds between GPU samples; 0 turns sampling off. */
  gpuTelemetryInterval?: string;
  pidsLimit?: string;
  logMaxSize?: string;
  logMaxFiles?: string;
  /** Commander's `--no-host-firewall`: false when given. */
  hostFirewall?: boolean;
  allowUnlimitedDisk?: boolean;
  logLevel?: string;
}

/** Bounds of the container limits an operator may set: below these a container cannot even start its shell and sshd. */
export const PIDS_LIMIT_MIN = 32;
export const PIDS_LIMIT_MAX = 4_194_304;
export const LOG_MAX_SIZE_MB_MAX = 1_048_576;
export const LOG_MAX_FILES_MAX = 100;

export const RUNTIMES = ['docker'] as const;
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export interface AgentSettings {
  config: Omit<AgentConfig, 'agentVersion'>;
  runtime: (typeof RUNTIMES)[number];
  logLevel: (typeof LOG_LEVELS)[number];
}

/** Where the credential lives unless told: the system's state directory for root, the user's otherwise. */
export function defaultStateDir(env: NodeJS.ProcessEnv, isRoot: boolean): string {
  if (isRoot) return '/var/lib/gpuplane-agent';
  return join(env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'gpuplane-agent');
}

function seconds(name: string, value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < min || n > max) {
    throw new AgentUsageError(`${name} must be a number of seconds from ${min} to ${max}, got ${JSON.stringify(value)}`);
  }
  return n;
}

function integer(name: string, value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value.trim()) || Number(value) < min || Number(value) > max) {
    throw new AgentUsageError(`${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(value)}`);
  }
  return Number(value);
}

/** `on`/`off` (and the usual spellings) of a variable; Commander's `--no-…` gives false already. */
function onOff(name: string, value: string | boolean | undefined): boolean | undefined {
  if (value === undefined || typeof value === 'boolean') return value;
  const v = value.trim().toLowerCase();
  if (['1', 'true', 'on', 'yes'].includes(v)) return true;
  if (['0', 'false', 'off', 'no'].includes(v)) return false;
  throw new AgentUsageError(`${name} must be on or off, got ${JSON.stringify(value)}`);
}

function ipv4(name: string, value: string | undefined): string | undefined {
  if (value !== undefined && !isIPv4(value)) throw new AgentUsageError(`${name} must be an IPv4 address, got ${JSON.stringify(value)}`);
  return value;
}

export function agentSettings(flags: AgentFlags, env: NodeJS.ProcessEnv, isRoot: boolean): AgentSettings {
  const pick = (flag: string | undefined, variable: string) => flag ?? (env[variable] === '' ? undefined : env[variable]);
  const url = pick(flags.url, 'GPUPLANE_URL')?.replace(/\/+$/, '').replace(/\/api\/v[01]$/, '');
  if (url !== undefined) {
    let ok = false;
    try {
      ok = ['http:', 'https:'].includes(new URL(url).protocol);
    } catch {
      ok = false;
    }
    if (!ok) throw new AgentUsageError(`--url must be an http:// or https:// URL, got ${JSON.stringify(url)}`);
  }
  const runtime = pick(flags.runtime, 'GPUPLANE_AGENT_RUNTIME') ?? 'docker';
  if (!(RUNTIMES as readonly string[]).includes(runtime)) throw new AgentUsageError(`--runtime must be one of ${RUNTIMES.join(', ')}, got ${JSON.stringify(runtime)}`);
  const logLevel = pick(flags.logLevel, 'GPUPLANE_LOG_LEVEL') ?? 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) throw new AgentUsageError(`--log-level must be one of ${LOG_LEVELS.join(', ')}`);
  const range = pick(flags.portRange, 'GPUPLANE_AGENT_PORT_RANGE');
  let portRange;
  try {
    portRange = range === undefined ? undefined : parsePortRange(range);
  } catch (err) {
    throw new AgentUsageError(`--port-range: ${(err as Error).message}`);
  }
  return {
    runtime: runtime as AgentSettings['runtime'],
    logLevel: logLevel as AgentSettings['logLevel'],
    config: {
      url,
      apiKey: pick(flags.apiKey, 'GPUPLANE_API_KEY'),
      stateDir: pick(flags.stateDir, 'GPUPLANE_AGENT_STATE_DIR') ?? defaultStateDir(env, isRoot),
      hardwareFile: pick(flags.hardware, 'GPUPLANE_AGENT_HARDWARE'),
      publicIp: ipv4('--public-ip', pick(flags.publicIp, 'GPUPLANE_AGENT_PUBLIC_IP')),
      portRange,
      publishIp: ipv4('--publish-ip', pick(flags.publishIp, 'GPUPLANE_AGENT_PUBLISH_IP')),
      heartbeatS: seconds('--heartbeat-interval', pick(flags.heartbeatInterval, 'GPUPLANE_AGENT_HEARTBEAT_INTERVAL'), 0.1, 3600),
      gpuTelemetryS: seconds('--gpu-telemetry-interval', pick(flags.gpuTelemetryInterval, 'GPUPLANE_AGENT_GPU_TELEMETRY_INTERVAL'), 0, 3600),
      resyncS: seconds('--resync-interval', pick(flags.resyncInterval, 'GPUPLANE_AGENT_RESYNC_INTERVAL'), 1, 3600),
      pidsLimit: integer('--pids-limit', pick(flags.pidsLimit, 'GPUPLANE_AGENT_PIDS_LIMIT'), PIDS_LIMIT_MIN, PIDS_LIMIT_MAX),
      logMaxSizeMb: integer('--log-max-size', pick(flags.logMaxSize, 'GPUPLANE_AGENT_LOG_MAX_SIZE'), 1, LOG_MAX_SIZE_MB_MAX),
      logMaxFiles: integer('--log-max-files', pick(flags.logMaxFiles, 'GPUPLANE_AGENT_LOG_MAX_FILES'), 1, LOG_MAX_FILES_MAX),
      // Commander sets `hostFirewall: true` when `--no-host-firewall` is absent: only its false is the flag's word.
      hostFirewall: flags.hostFirewall === false ? false : onOff('GPUPLANE_AGENT_HOST_FIREWALL', pick(undefined, 'GPUPLANE_AGENT_HOST_FIREWALL')),
      allowUnlimitedDisk: flags.allowUnlimitedDisk === true ? true : onOff('GPUPLANE_AGENT_ALLOW_UNLIMITED_DISK', pick(undefined, 'GPUPLANE_AGENT_ALLOW_UNLIMITED_DISK')),
    },
  };
}
