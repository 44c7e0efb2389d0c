/**
 * The server side of the agent protocol (docs/AGENT-PROTOCOL.md), composed of its parts: registration of real hosts'
 * machines (agent-server-registration.ts), machine keys (-keys), the desired state each agent long-polls (-polls,
 * read by -desired-reads), heartbeats (-heartbeats) and the status reports that drive its instances (-reports), the
 * liveness timeout (-liveness), and log answers (-logs). The database is the truth; what a process keeps (the key
 * cache, the desired states built) stands only while the change feed (agent-server-changes.ts) says nothing changed.
 */
import type { Config } from '../config.js';
import type { Clock } from '../platform/clock.js';
import type { SecretBox } from '../platform/crypto.js';
import type { Store, Tx } from '../platform/db/connect.js';
import { kvState } from '../platform/db/kv.js';
import type { Random } from '../platform/random.js';
import type { Scheduler } from '../platform/scheduler.js';
import type { AgentHardwareT, GpuTelemetryT, ObservedInstanceT } from '../protocol/agent-protocol-schemas.js';
import type { MachinesService } from '../machines/machines-service.js';
import type { InstanceChanges, InstancesAgentPort } from '../instances/instances-agent-contract.js';
import { agentStore } from './agent-server-store.js';
import { applyReports } from './agent-server-observed.js';
import { desiredChanges, type DesiredChanges } from './agent-server-changes.js';
import { desiredReads, type DesiredRead, type DesiredState } from './agent-server-desired-reads.js';
import { machineKeys } from './agent-server-keys.js';
import { liveness } from './agent-server-liveness.js';
import { registration } from './agent-server-registration.js';
import { statusReports } from './agent-server-reports.js';
import { heartbeats } from './agent-server-heartbeats.js';
import { desiredPolls, POLL_MS } from './agent-server-polls.js';
import { agentLogs } from './agent-server-logs.js';
import type { MachineVolumesRead } from '../volumes/volumes-contract.js';
import { agentHealthStore, type HealthPeriod } from './agent-server-health-store.js';
import { gpuHealth, HEALTH_EVENTS_SHOWN, type GpuHealthChange } from './agent-server-health.js';

export type { DesiredRead };

/** A machine's GPUs as its agent last reported them (issue 33). */
export interface MachineGpuState {
  telemetry: GpuTelemetryT | null;
  sampled_at: number | null;
  fault: string | null;
  events: HealthPeriod[];
}

export interface AgentDeps {
  store: Store;
  clock: Clock;
  random: Random;
  scheduler: Scheduler;
  config: Pick<Config, 'agentOfflineAfter' | 'hostMachinesMax' | 'hostRegistrationsPerHour'> & Partial<Pick<Config, 'stopGraceSeconds'>>;
  secretBox: SecretBox;
  fleet: MachinesService;
  instances: InstancesAgentPort;
  hub: InstanceChanges;
  /** A failed background read (the held polls' watch). */
  warn?: (err: unknown) => void;
  /** Issue 33: a machine's GPU health changed (committed): the host's audit entry (services.ts). */
  onGpuHealthChange?: (c: GpuHealthChange) => void;
  /** Public keys on these accounts, read at once: renters' and team members' (agent-server-desired-reads.ts). */
  accountKeys?: (userIds: readonly number[], tx: Tx) => Promise<Map<number, string[]>>;
  /** A machine's volumes and its instances' mounts, for its desired state (the volumes feature, issue 33). */
  volumes?: MachineVolumesRead;
}

export function agentServiceFactory(deps: AgentDeps) {
  const { store, clock, random, scheduler, config, secretBox, fleet, hub } = deps;
  const db = store.db;
  const agents = agentStore(db);
  const kv = kvState(db);
  const heartbeatInterval = Math.max(1, Math.floor(config.agentOfflineAfter / 3));
  const notify = () => deps.instances.notify();
  // PostgreSQL: concurrent heartbeats and long-poll renewals share statements (platform/coalesce.ts), one round trip and
  // one commit for all that arrive while earlier ones run. SQLite runs each at once in-process: nothing to share.
  const shared = store.dialect === 'postgres';
  const warn = deps.warn ?? (() => undefined);
  let feed: Promise<DesiredChanges> | null = null;
  const changes = () => (feed ??= desiredChanges(store, { hub, pollMs: POLL_MS, warn }));

  const reads = desiredReads({ db, clock, secretBox, fleet, agents, instances: deps.instances, accountKeys: deps.accountKeys, volumes: deps.volumes, stopGraceS: config.stopGraceSeconds });
  const keys = machineKeys({ db, agents, changes });
  const health = agentHealthStore(db);
  const gpu = gpuHealth({ agents, health, fleet, kv, scheduler });
  const { ensureSweep } = liveness({ agents, kv, scheduler, config, fleet, instances: deps.instances, notify, health, gpuHealth: gpu });
  const { register } = registration({ db, clock, random, config, fleet, agents, kv, forgetKeysOf: keys.forget, ensureSweep });
  const { status } = statusReports({
    db, clock, config, fleet, agents, instances: deps.instances, heartbeatInterval, desiredOf: reads.desiredOf, ensureSweep, notify,
    gpuHealth: gpu, health, onGpuHealthChange: deps.onGpuHealthChange,
  });
  const { report } = heartbeats({ shared, clock, agents, heartbeatInterval, authenticate: keys.authenticate, status });
  const { desired } = desiredPolls({ shared, clock, agents, hub, changes, desiredOf: (machineId) => reads.desiredOf(machineId), warn });
  const { answerLogs, logs } = agentLogs({ clock, random, agents, hub, notify });

  return {
    heartbeatInterval,
    register,
    authenticate: keys.authenticate,
    revoke: keys.revoke,

    /** The machine's whole desired state and its version. */
    desiredState: async (machineId: number, tx: Tx = db): Promise<DesiredState> => (await reads.desiredOf(machineId, tx)).state,

    /**
     * For the emulator's simulated agent (src/emulator/simulated-hosts/), which acts on the same desired state and
     * reports through the same code as a real host's agent, inside the transaction of its pass (it needs no machine
     * key, and its machines have no agent row: the liveness sweep never sees them; their liveness is the simulated
     * fleet's heartbeat).
     */
    simulated: {
      desiredOf: reads.desiredOfSimulated,
      /**
       * The reports of simulated machines' agents, applied together (agent-server-observed.ts `applyReports`): each
       * acted on the desired state just read (`current`, its rows locked), so each is converged. Returns how many
       * instances changed.
       */
      applyReports: (tx: Tx, reports: readonly { observed: ObservedInstanceT[]; current: DesiredRead }[], now: number): Promise<number> =>
        applyReports(deps.instances, tx, reports.map(({ observed, current }) => ({
          rows: current.rows, observed, boots: new Map(current.state.instances.map((i) => [i.instance_id, i.boot])), converged: true, locked: true,
        })), now),
    },

    desired,
    report,
    status,
    answerLogs,

    /** `PUT /api/v0/agent/commands/{request_id}/`: the agent's answer to an `execute` on its machine. */
    async answerCommand(machineId: number, requestId: string, body: { output: string; error?: string }): Promise<{ success: true }> {
      await deps.instances.commands.answerCommand(machineId, requestId, body);
      return { success: true };
    },

    /** `PUT /api/v0/agent/snapshots/{request_id}/`: how a snapshot on its machine went. */
    async answerSnapshot(machineId: number, requestId: string, body: { error?: string }): Promise<{ success: true }> {
      await deps.instances.commands.answerSnapshot(machineId, requestId, body);
      return { success: true };
    },

    logs,

    /**
     * Issue 33: the latest GPU sample, its time and the fault of each of these machines (agent machines only), and the
     * host's recent health events: what instances and `show machine` show.
     */
    async gpuStates(machineIds: readonly number[], opts: { events?: boolean } = {}): Promise<Map<number, MachineGpuState>> {
      const rows = await health.samplesOf(machineIds);
      const events = opts.events ? await health.latest(rows.map((r) => r.machine_id), HEALTH_EVENTS_SHOWN) : new Map<number, HealthPeriod[]>();
      return new Map(rows.map((r) => [r.machine_id, {
        telemetry: r.gpu_telemetry === null ? null : (JSON.parse(r.gpu_telemetry) as GpuTelemetryT),
        sampled_at: r.gpu_telemetry_at === null ? null : Number(r.gpu_telemetry_at),
        fault: r.gpu_fault,
        events: events.get(r.machine_id) ?? [],
      }]));
    },
  };
}

export type AgentService = ReturnType<typeof agentServiceFactory>;
export type { AgentHardwareT };
