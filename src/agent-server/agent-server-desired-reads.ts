/**
 * Reading a machine's desired state (docs/AGENT-PROTOCOL.md §2) in a transaction: its instances, with their boot
 * counts, SSH keys (the instance's own, its renter's account keys, and for a team's instance the account keys of every
 * member whose role allows instance_write) and secrets, its open log requests, and the instances feature's `execute` and snapshot requests,
 * shaped by agent-server-desired.ts. The long-poll, a status report and the emulator's simulated agent all read it here.
 */
import type { SecretBox } from '../platform/crypto.js';
import type { Clock } from '../platform/clock.js';
import type { Db, Tx } from '../platform/db/connect.js';
import type { CommandRequestT, DesiredInstanceT, DesiredVolumeT, LogRequestT, SnapshotRequestT } from '../protocol/agent-protocol-schemas.js';
import type { MachineInfo } from '../machines/machines-contract.js';
import type { MachinesService } from '../machines/machines-service.js';
import { bootCounts, sshKeysOf, type InstanceRow, type InstancesAgentPort } from '../instances/instances-agent-contract.js';
import { memberIdsAllowing } from '../teams/teams-contract.js';
import type { AgentStore } from './agent-server-store.js';
import { desiredInstance, desiredVersion, TEAM_SSH_CATEGORY } from './agent-server-desired.js';
import type { MachineVolumesRead } from '../volumes/volumes-contract.js';
import { createHash } from 'node:crypto';

/** A machine's desired state as read in a transaction, with the instance rows it was built from. */
export interface DesiredRead {
  state: DesiredState;
  rows: InstanceRow[];
  validUntil: number;
  /** The machine, when it was read to build the state (it has instances). */
  machine?: MachineInfo;
}

export interface DesiredState {
  version: number;
  instances: DesiredInstanceT[];
  log_requests: LogRequestT[];
  commands: CommandRequestT[];
  snapshots: SnapshotRequestT[];
  /** The machine's live volumes (issue 33), where the volumes feature is wired: listed even when none (the agent removes the rest). */
  volumes?: DesiredVolumeT[];
}

/** A version that moves with the machine's volumes too; the same as without them when it has none (an idle machine's EMPTY_VERSION). */
function withVolumes(version: number, volumes: DesiredVolumeT[] | undefined): number {
  if (!volumes?.length) return version;
  return createHash('sha256').update(JSON.stringify({ version, volumes })).digest().readUIntBE(0, 6);
}

export interface DesiredReadsDeps {
  db: Db;
  clock: Clock;
  secretBox: SecretBox;
  fleet: MachinesService;
  agents: AgentStore;
  instances: Pick<InstancesAgentPort, 'store' | 'commands'>;
  /**
   * The public keys on each of these accounts, read at once (the ssh-keys service's `publicKeysOfMany`): the renter's
   * go into every container of theirs with the instance's own, and a team's instance also lets in its members with
   * instance access. Without it, only the instances' own keys.
   */
  accountKeys?: (userIds: readonly number[], tx: Tx) => Promise<Map<number, string[]>>;
  /** The machine's volumes and its instances' mounts (the volumes feature, issue 33); absent: none are sent. */
  volumes?: MachineVolumesRead;
  /** The operator's grace between SIGTERM and SIGKILL (GPUPLANE_STOP_GRACE_SECONDS), sent with each instance. */
  stopGraceS?: number;
}

export function desiredReads({ db, clock, secretBox, fleet, agents, instances: { store, commands }, accountKeys: accountKeysOf, volumes: volumesOf, stopGraceS }: DesiredReadsDeps) {
  /**
   * The desired instances of these rows (of machines with `machineGpus` GPUs each): with their boot counts, SSH keys
   * (the renter's account keys, those of the members of its team allowed instance_write, and the instance's own) and
   * secrets, read for all the rows at once: a few statements whatever the number of rows.
   */
  async function desiredInstances(rows: InstanceRow[], machineGpus: (row: InstanceRow) => number, tx: Tx): Promise<DesiredInstanceT[]> {
    const ids = rows.map((r) => r.id);
    const boots = await bootCounts(ids, tx);
    const keys = await sshKeysOf(ids, tx);
    const teamIds = rows.flatMap((r) => (r.team_id === null ? [] : [r.team_id]));
    const members = accountKeysOf && teamIds.length ? await memberIdsAllowing(teamIds, TEAM_SSH_CATEGORY, tx) : new Map<number, number[]>();
    const users = [...new Set([...rows.map((r) => r.user_id), ...[...members.values()].flat()])];
    const accountKeys = accountKeysOf && users.length ? await accountKeysOf(users, tx) : new Map<number, string[]>();
    const instances: DesiredInstanceT[] = [];
    for (const r of rows) {
      const team = r.team_id === null ? [] : (members.get(r.team_id) ?? []).flatMap((u) => accountKeys.get(u) ?? []);
      const sshKeys = [...new Set([...(accountKeys.get(r.user_id) ?? []), ...team, ...(keys.get(r.id) ?? [])])];
      instances.push(desiredInstance(r, {
        boot: boots.get(r.id) ?? 0,
        sshKeys,
        imageLogin: r.image_login_sealed ? secretBox.open(r.image_login_sealed) : null,
        accountEnv: r.account_env_sealed ? (JSON.parse(secretBox.open(r.account_env_sealed) ?? '{}') as Record<string, string>) : {},
        apiKey: r.api_key_sealed ? secretBox.open(r.api_key_sealed) : null,
        jupyterToken: r.jupyter_token_sealed ? secretBox.open(r.jupyter_token_sealed) : null,
        machineGpus: machineGpus(r),
        stopGraceS,
      }));
    }
    return instances;
  }

  /** The machine's whole desired state and its version, with the instance rows it was built from. */
  async function desiredOf(machineId: number, tx: Tx = db): Promise<DesiredRead> {
    const rows = await store.listOnMachine(machineId, tx);
    const machine = rows.length ? await fleet.machine(machineId, tx) : undefined;
    const instances = await desiredInstances(rows, () => machine?.num_gpus ?? 1, tx);
    // Volumes (issue 33): the machine's live ones, and where each instance mounts one.
    const vols = volumesOf ? await volumesOf(machineId, tx) : undefined;
    for (const d of instances) {
      const mounts = vols?.mounts.get(d.instance_id);
      if (mounts) d.mounts = mounts;
    }
    const open = await agents.openLogRequests(machineId, clock.now(), tx);
    const log_requests = open.map((l) => ({ request_id: l.request_id, instance_id: l.instance_id, tail: l.tail, filter: l.filter }));
    // Open requests drop out when they expire: a state with log requests is reused only until the first expires; one
    // with commands or snapshots (rare, and dropped by age) is not reused.
    let validUntil = Math.min(Infinity, ...open.map((l) => l.expires_at));
    const openCommands = await commands.openCommands(machineId, tx);
    const snapshots = await commands.openSnapshots(machineId, tx);
    if (openCommands.length || snapshots.length) validUntil = -Infinity;
    return {
      state: {
        version: withVolumes(desiredVersion(instances, log_requests, openCommands, snapshots), vols?.volumes),
        instances, log_requests, commands: openCommands, snapshots,
        ...(vols ? { volumes: vols.volumes } : {}),
      },
      rows,
      validUntil,
      machine,
    };
  }

  /**
   * The desired states of simulated machines (the emulator's agent, src/emulator/simulated-hosts/), read together for
   * its pass over them: their instances read and locked in one statement (the caller holds the machines' rows:
   * MachinesApi.lockMachine), in id order. A simulated machine never has log requests, commands or snapshots for its
   * agent: it has no agent row (log requests go to real hosts only), its container answers `execute` at once, and a
   * snapshot needs a real host.
   */
  async function desiredOfSimulated(machines: readonly Pick<MachineInfo, 'id' | 'num_gpus'>[], tx: Tx): Promise<Map<number, DesiredRead>> {
    const rows = await store.listOnMachines(machines.map((m) => m.id), tx, true);
    const gpus = new Map(machines.map((m) => [m.id, m.num_gpus]));
    const instances = await desiredInstances(rows, (r) => gpus.get(r.machine_id!) ?? 1, tx);
    const out = new Map<number, DesiredRead>();
    for (const m of machines) {
      const mine = instances.filter((_, i) => rows[i].machine_id === m.id);
      out.set(m.id, {
        state: { version: desiredVersion(mine, [], [], []), instances: mine, log_requests: [], commands: [], snapshots: [] },
        rows: rows.filter((r) => r.machine_id === m.id),
        validUntil: Infinity,
      });
    }
    return out;
  }

  return { desiredOf, desiredOfSimulated };
}

export type DesiredReads = ReturnType<typeof desiredReads>;
