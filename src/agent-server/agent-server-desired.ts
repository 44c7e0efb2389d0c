/**
 * The desired state of a real host's machine (docs/AGENT-PROTOCOL.md §2), built from the instances placed on it.
 * Pure functions: the service reads the rows, these shape them. The version is a digest of the whole reply, so it
 * changes with anything in it (any difference, not only a larger one) and is the same in every server process.
 */
import { createHash } from 'node:crypto';
import type { CommandRequestT, DesiredInstanceT, DockerLoginT, LogRequestT, SnapshotRequestT } from '../protocol/agent-protocol-schemas.js';
import { splitShellWords } from '../protocol/shell-words.js';
import type { Category } from '../platform/permissions.js';
import { RUNTYPE_PORTS, wantsRunning, type InstanceRow, type Runtype } from '../instances/instances-agent-contract.js';

export { wantsRunning };

/**
 * The role right that lets a member of a team into the team's instances with their own account SSH keys (issue 31
 * item 4): the right to act on its instances. The desired state's reads and its fingerprint both use it.
 */
export const TEAM_SSH_CATEGORY: Category = 'instance_write';

/** The spec's runtypes as the agent knows them: ssh_direct/ssh_proxy → ssh, jupyter_* → jupyter. */
export function agentRuntype(runtype: string): 'args' | 'ssh' | 'jupyter' {
  if (runtype === 'args') return 'args';
  return runtype.startsWith('jupyter') ? 'jupyter' : 'ssh';
}

/** `-u <username> -p <password> [<server>]` (spec image_login) as the agent's registry login. */
export function dockerLogin(imageLogin: string | null, image: string): DockerLoginT | null {
  if (!imageLogin) return null;
  const m = /^-u\s+(\S+)\s+-p\s+(\S+)(?:\s+(\S+))?\s*$/.exec(imageLogin.trim());
  if (!m) return null;
  const first = image.split('/')[0];
  const server = m[3] ?? (image.includes('/') && /[.:]/.test(first) ? first : 'docker.io');
  return { username: m[1], password: m[2], server };
}

export interface DesiredContext {
  boot: number;
  sshKeys: string[];
  /** The instance's image_login, opened. */
  imageLogin: string | null;
  /** The account environment variables the instance was created with, opened; its own env wins on a clash. */
  accountEnv: Record<string, string>;
  /** The instance key, opened: the container's `CONTAINER_API_KEY` (api-spec), over any variable of that name. */
  apiKey: string | null;
  /** A Jupyter runtype's token, opened (issue 32): the container's `JUPYTER_TOKEN`; null when it has none. */
  jupyterToken?: string | null;
  machineGpus: number;
  /** The operator's grace between SIGTERM and SIGKILL (issue 33, notice helper); absent: the agent's own. */
  stopGraceS?: number;
}

export function desiredInstance(inst: InstanceRow, ctx: DesiredContext): DesiredInstanceT {
  const runtype = agentRuntype(inst.runtype);
  const share = Math.min(1, Math.max(inst.num_gpus, 1) / Math.max(ctx.machineGpus, 1));
  return {
    instance_id: inst.id,
    state: wantsRunning(inst) ? 'running' : 'stopped',
    generation: inst.generation,
    ...(inst.repull === 1 ? { repull: true } : {}),
    boot: ctx.boot,
    image: inst.image,
    docker_login: dockerLogin(ctx.imageLogin, inst.image),
    runtype,
    // Split by the rule instances-request.ts joined it with (protocol/shell-words.ts).
    args: runtype === 'args' && inst.args_str ? splitShellWords(inst.args_str) : null,
    onstart: runtype === 'args' ? null : inst.onstart,
    env: { ...ctx.accountEnv, ...(JSON.parse(inst.env) as Record<string, string>), ...(ctx.apiKey ? { CONTAINER_API_KEY: ctx.apiKey } : {}) },
    ports: [...new Set([...RUNTYPE_PORTS[inst.runtype as Runtype] ?? [], ...(JSON.parse(inst.port_maps) as string[])])],
    hostname: inst.hostname,
    ssh_keys: ctx.sshKeys,
    gpu_indices: (JSON.parse(inst.gpu_indexes) as number[]).slice().sort((a, b) => a - b),
    cpu_share: share,
    memory_share: share,
    disk: inst.disk > 0 ? inst.disk : 1,
    // issue 33 (notice helper): the stop's grace, and why it stops (its status_msg: instances-lifecycle stopNoticeMsg).
    ...(ctx.stopGraceS !== undefined ? { stop_grace_s: ctx.stopGraceS } : {}),
    ...(!wantsRunning(inst) && inst.status_msg ? { stop_reason: inst.status_msg.slice(0, 2000) } : {}),
    // Issue 32: what the entrypoint starts Jupyter with (container-spec.ts); optional fields an older agent ignores.
    ...(runtype === 'jupyter' ? jupyterFields(inst, ctx.jupyterToken ?? null) : {}),
  };
}

/** A `jupyter` instance's token, kind (lab or notebook) and directory, each only when it has one. */
function jupyterFields(inst: InstanceRow, token: string | null): Pick<DesiredInstanceT, 'jupyter_token' | 'use_jupyter_lab' | 'jupyter_dir'> {
  return {
    ...(token ? { jupyter_token: token } : {}),
    ...(inst.use_jupyter_lab === 1 ? { use_jupyter_lab: true } : {}),
    ...(inst.jupyter_dir ? { jupyter_dir: inst.jupyter_dir } : {}),
  };
}

/** The version of a desired-state reply: a digest of all of it, as a safe integer (48 bits). */
export function desiredVersion(
  instances: DesiredInstanceT[],
  logRequests: LogRequestT[],
  commands: CommandRequestT[] = [],
  snapshots: SnapshotRequestT[] = [],
): number {
  const h = createHash('sha256').update(JSON.stringify({ instances, logRequests, commands, snapshots })).digest();
  return h.readUIntBE(0, 6);
}
