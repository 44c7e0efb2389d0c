/**
 * The server side of the agent protocol (docs/AGENT-PROTOCOL.md): registration of real hosts' machines, machine
 * keys, the desired state each agent long-polls, the status reports that drive its instances, log answers, and the
 * liveness timeout. The database is the truth; the held long-polls of a process are watched together
 * (agent-watch.ts): on every local change and every POLL_MS, so a change made by any server process reaches the
 * agent within that.
 */
import type { Config } from '../config.js';
import type { Clock } from '../platform/clock.js';
import { digestEqual, sha256Hex, type SecretBox } from '../platform/crypto.js';
import type { Store, Tx } from '../platform/db/connect.js';
import { ApiError } from '../platform/errors.js';
import { secretToken, type Random } from '../platform/random.js';
import type { Scheduler } from '../platform/scheduler.js';
import type { Principal } from '../platform/auth.js';
import {
  LOG_TEXT_MAX_CHARS, type AgentHardwareT, type CommandRequestT, type DesiredInstanceT, type LogRequestT, type ObservedInstanceT, type SnapshotRequestT,
} from '../protocol/agent-protocol-schemas.js';
import type { MachineInfo } from '../machines/machines-contract.js';
import type { AgentLogAnswer, AgentRegisterRequest, AgentStatusRequest } from '../sdk/api/agent.js';
import type { FleetService } from '../machines/machines-service.js';
import type { Lifecycle } from '../instances/instances-lifecycle.js';
import type { InstanceRow, InstancesStore } from '../instances/instances-store.js';
import { kvState } from '../platform/db/kv.js';
import { coalescing } from '../platform/coalesce.js';
import type { EventsHub } from '../instances/instances-events.js';
import { agentStore, type AgentMachineRow } from './agent-server-store.js';
import { desiredInstance, desiredVersion } from './agent-server-desired.js';
import { applyObserved, applyReports, markOffline } from './agent-server-observed.js';
import { desiredWatch } from './agent-server-watch.js';
import { desiredChanges, type DesiredChanges } from './agent-server-changes.js';
import { machineFromHardware, hardwarePatch, networkPatch } from './agent-server-hardware.js';
import { checkHardware, checkObservedPorts } from './agent-server-checks.js';
import { registrationCaps } from './agent-server-registration.js';

/** The liveness sweep: one chain of jobs across every process, each due when the next machine can go silent. */
export const JOB_AGENT_SWEEP = 'agent.sweep';
/** Per-machine timers of earlier versions; a left-over one only makes sure the sweep runs. */
const JOB_AGENT_OFFLINE_LEGACY = 'agent.offline';
/** kv row held while the sweep chain runs (the chain's lock, as fleet-heartbeat.ts does it). */
const SWEEP_KV = 'agent.sweep';
/** Machines one sweep job takes offline at most. */
const SWEEP_BATCH = 50;
/** The version of a machine's desired state with nothing in it. */
const EMPTY_VERSION = desiredVersion([], [], [], []);
/** Without change notifications (SQLite), a held long-poll checks for another connection's commit this often. */
export const POLL_MS = 100;
/** Held long-polls re-read their machines' fingerprints at least this often, whatever the change feed says. */
export const SAFETY_MS = 10_000;
/** Desired states kept for reuse by a poll's renewal (one per machine whose agent polls this process). */
const DESIRED_CACHE_MAX = 50_000;
/**
 * Heartbeats (and long-poll renewals) in one statement at most, and such statements running at once per process. One
 * at a time measured best (`agents` bench, 10,000 agents, 3 processes): heartbeat p99 28–33 ms, against 58 ms with two
 * and 90 ms with four, whose smaller statements cost the database more in all.
 */
const COALESCE = { maxBatch: 500, maxInFlight: 1 };
/** A log request the agent has not answered in this long is dropped from its desired state. */
export const LOG_ANSWER_TTL_S = 120;
/** How long fetching a real host's log waits for its agent's answer before saying "not yet" (404; clients retry). */
export const LOG_WAIT_MS = 5000;


/** The instances feature's `execute` and `take snapshot` requests for agents (instances-commands.ts `agent`). */
export interface InstanceCommandsPort {
  openCommands(machineId: number, tx?: Tx): Promise<CommandRequestT[]>;
  openSnapshots(machineId: number, tx?: Tx): Promise<SnapshotRequestT[]>;
  answerCommand(machineId: number, requestId: string, a: { output: string; error?: string }): Promise<void>;
  answerSnapshot(machineId: number, requestId: string, a: { error?: string }): Promise<void>;
}

export interface AgentDeps {
  store: Store;
  clock: Clock;
  random: Random;
  scheduler: Scheduler;
  config: Pick<Config, 'agentOfflineAfter' | 'hostMachinesMax' | 'hostRegistrationsPerHour'>;
  secretBox: SecretBox;
  fleet: FleetService;
  instances: { store: InstancesStore; lifecycle: Lifecycle; notify: () => void; commands: InstanceCommandsPort };
  hub: EventsHub;
  /** A failed background read (the held polls' watch). */
  warn?: (err: unknown) => void;
  /** Public keys on the renter's account, put in every container with the instance's own. */
  accountKeys?: (userId: number, tx?: Tx) => Promise<string[]>;
}

/** A real-time deadline for holding a connection (not service time: a virtual clock does not move by itself). */
function deadline(ms: number): { passed: () => boolean; left: () => number; cancel: () => void } {
  const end = performance.now() + ms;
  let passed = false;
  const t = setTimeout(() => (passed = true), ms);
  return { passed: () => passed, left: () => Math.max(0, end - performance.now()), cancel: () => clearTimeout(t) };
}

/** A machine's desired state as read in a transaction, with the instance rows it was built from. */
export interface DesiredRead {
  state: DesiredState;
  rows: InstanceRow[];
  validUntil: number;
  /** The machine, when it was read to build the state (it has instances). */
  machine?: MachineInfo;
}

interface DesiredState {
  version: number;
  instances: DesiredInstanceT[];
  log_requests: LogRequestT[];
  commands: CommandRequestT[];
  snapshots: SnapshotRequestT[];
}

export function agentServiceFactory(deps: AgentDeps) {
  const { store, clock, random, scheduler, config, secretBox, fleet, hub } = deps;
  const db = store.db;
  const agents = agentStore(db);
  const kv = kvState(db);
  const caps = registrationCaps({ agents, kv, config });
  const heartbeatInterval = Math.max(1, Math.floor(config.agentOfflineAfter / 3));
  const notify = () => deps.instances.notify();
  // PostgreSQL: concurrent heartbeats and long-poll renewals share statements (platform/coalesce.ts), one round trip and
  // one commit for all that arrive while earlier ones run. SQLite runs each at once in-process: nothing to share.
  const shared = store.dialect === 'postgres';
  const fingerprintOf = shared
    ? coalescing(async (ids: number[]) => {
      const found = await agents.fingerprints([...new Set(ids)]);
      return ids.map((id) => found.get(id)!);
    }, COALESCE)
    : async (machineId: number): Promise<string> => (await agents.fingerprints([machineId])).get(machineId)!;
  type Beat = { keyHash: string; agentVersion: string };
  const touchIfIdle = shared
    ? coalescing(async (beats: Beat[]) => {
      const touched = await agents.touchManyIfIdle(beats, clock.now());
      return beats.map((b) => touched.get(b.keyHash));
    }, COALESCE)
    : (b: Beat) => agents.touchIfIdle(b.keyHash, clock.now(), b.agentVersion);
  const warn = deps.warn ?? (() => undefined);
  let feed: Promise<DesiredChanges> | null = null;
  const changes = () => (feed ??= desiredChanges(store, { hub, pollMs: POLL_MS, warn }));
  const watch = desiredWatch({ hub, changes, safetyMs: SAFETY_MS, fingerprints: (ids) => agents.fingerprints(ids), warn });
  /**
   * The last desired state built for each machine, with the fingerprint it was built at: a renewed long-poll reads
   * the fingerprint (one statement) and reuses the state while it stands and no log request in it has expired.
   */
  const built = new Map<number, { seen: string; state: DesiredState; validUntil: number }>();
  /** Machine keys' digests and the machine each belongs to, as of an epoch of that machine (`authenticate`). */
  const keyCache = new Map<string, { machineId: number; epoch: string }>();
  /** A machine's key changed here: this process forgets it at once; the others when the change notice reaches them. */
  const forgetKeysOf = (machineId: number) => {
    for (const [hash, known] of keyCache) if (known.machineId === machineId) keyCache.delete(hash);
  };

  async function transact<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    return db.transaction().execute(fn);
  }

  /**
   * The desired instances of these rows (of machines with `machineGpus` GPUs each): with their boot counts, SSH keys
   * (the account's and the instance's own) and secrets, read for all the rows at once.
   */
  async function desiredInstances(rows: InstanceRow[], machineGpus: (row: InstanceRow) => number, tx: Tx): Promise<DesiredInstanceT[]> {
    const ids = rows.map((r) => r.id);
    const boots = await agents.bootCounts(ids, tx);
    const keys = await agents.sshKeysOf(ids, tx);
    const accountKeys = new Map<number, string[]>();
    const instances: DesiredInstanceT[] = [];
    for (const r of rows) {
      if (deps.accountKeys && !accountKeys.has(r.user_id)) accountKeys.set(r.user_id, await deps.accountKeys(r.user_id, tx));
      const sshKeys = [...new Set([...(accountKeys.get(r.user_id) ?? []), ...(keys.get(r.id) ?? [])])];
      instances.push(desiredInstance(r, {
        boot: boots.get(r.id) ?? 0,
        sshKeys,
        imageLogin: r.image_login_sealed ? secretBox.open(r.image_login_sealed) : null,
        accountEnv: r.account_env_sealed ? (JSON.parse(secretBox.open(r.account_env_sealed) ?? '{}') as Record<string, string>) : {},
        machineGpus: machineGpus(r),
      }));
    }
    return instances;
  }

  /** The machine's whole desired state and its version, with the instance rows it was built from. */
  async function desiredOf(machineId: number, tx: Tx = db): Promise<DesiredRead> {
    const rows = await deps.instances.store.listOnMachine(machineId, tx);
    const machine = rows.length ? await fleet.machine(machineId, tx) : undefined;
    const instances = await desiredInstances(rows, () => machine?.num_gpus ?? 1, tx);
    const open = await agents.openLogRequests(machineId, clock.now(), tx);
    const log_requests = open.map((l) => ({ request_id: l.request_id, instance_id: l.instance_id, tail: l.tail, filter: l.filter }));
    // Open requests drop out when they expire: a state with log requests is reused only until the first expires; one
    // with commands or snapshots (rare, and dropped by age) is not reused.
    let validUntil = Math.min(Infinity, ...open.map((l) => l.expires_at));
    const commands = await deps.instances.commands.openCommands(machineId, tx);
    const snapshots = await deps.instances.commands.openSnapshots(machineId, tx);
    if (commands.length || snapshots.length) validUntil = -Infinity;
    return { state: { version: desiredVersion(instances, log_requests, commands, snapshots), instances, log_requests, commands, snapshots }, rows, validUntil, machine };
  }

  /**
   * The desired states of simulated machines (the emulator's agent, src/emulator/simulated-hosts/), read together for its pass over
   * them: their instances read and locked in one statement (the caller holds the machines' rows: FleetApi.lockMachine),
   * in id order. A simulated machine never has log requests, commands or snapshots for its agent: it has no agent row
   * (log requests go to real hosts only), its container answers `execute` at once, and a snapshot needs a real host.
   */
  async function desiredOfSimulated(machines: readonly Pick<MachineInfo, 'id' | 'num_gpus'>[], tx: Tx): Promise<Map<number, DesiredRead>> {
    const rows = await deps.instances.store.listOnMachines(machines.map((m) => m.id), tx, true);
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

  /** The machine's whole desired state and its version. */
  const desiredState = async (machineId: number, tx: Tx = db): Promise<DesiredState> => (await desiredOf(machineId, tx)).state;

  /**
   * Applies an agent's report on the machine to its instances, inside `tx`: the core of `status`, and the report of
   * the emulator's simulated agent (src/emulator/simulated-hosts/). `current` is the desired state as read in `tx`, when the caller has
   * it; its `rows` are the instances the report may move. Returns how many changed, and the desired state's version.
   */
  async function applyReport(
    tx: Tx,
    machineId: number,
    report: Pick<AgentStatusRequest, 'desired_version' | 'observed'>,
    now: number,
    current?: DesiredRead,
  ): Promise<{ n: number; version: number }> {
    current ??= await desiredOf(machineId, tx);
    const boots = new Map(current.state.instances.map((i) => [i.instance_id, i.boot]));
    // The caller holds the machine's row (FleetApi.lockMachine) when the machine has instances: every writer takes it
    // before the instances (PostgreSQL lock order).
    const n = await applyObserved(deps.instances, tx, current.rows, report.observed, boots, report.desired_version === current.state.version, now);
    return { n, version: current.state.version };
  }

  /**
   * A report's hardware, or one held back before, applied to the fleet's machine in the report's transaction (the
   * caller holds the machine's row). What renters chose and pay for (the GPU model, its memory, the CPU, the disk,
   * the driver) does not change under them (issue 29 item 20: a report renamed a rented machine "H100 SXM"): while
   * instances are on the machine only where it is reached changes at once (its address and port range, which renters
   * need as they are to connect), and the description is held (`hardware_pending`, said in the reply) until the
   * machine is free, when the next report applies it. Returns whether a description is held.
   */
  async function applyHardware(tx: Tx, row: AgentMachineRow, reported: AgentHardwareT | undefined, occupied: boolean): Promise<boolean> {
    const wasHeld = row.hardware_pending === 1;
    if (!reported && (!wasHeld || occupied)) return wasHeld;
    const hw = reported ?? (JSON.parse(row.hardware) as AgentHardwareT);
    await fleet.updateAgentMachine(tx, row.machine_id, occupied ? networkPatch(hw) : hardwarePatch(hw));
    if (occupied !== wasHeld) await agents.update(row.machine_id, { hardware_pending: occupied ? 1 : 0 }, tx);
    return occupied;
  }

  /**
   * Starts the liveness sweep unless it runs. A running chain is due no later than `dueAt`: it is due when the machine
   * that reported longest ago can go silent, and a machine that reports now can go silent only later.
   */
  async function ensureSweep(tx: Tx, dueAt: number): Promise<void> {
    if (await kv.claim(tx, SWEEP_KV, String(dueAt))) await scheduler.schedule(JOB_AGENT_SWEEP, dueAt, {}, { tx, ref: SWEEP_KV });
  }

  /**
   * One sweep: every machine silent for the liveness timeout goes offline with its running instances; the next sweep
   * is due when the next one can. A heartbeat is then one row update, with no timer to move.
   */
  async function sweep(_payload: unknown, { tx, now }: { tx: Tx; now: number }): Promise<void> {
    const timeout = config.agentOfflineAfter;
    const silent = await agents.silentSince(now - timeout, SWEEP_BATCH, tx);
    for (const machineId of silent) {
      await agents.update(machineId, { offline: 1 }, tx);
      // Lock order of every writer (PostgreSQL): the machine's agent row, the machine's row (FleetApi.lockMachine:
      // before any instance, as a destroy or a rental there takes it), its instances, then the rest of the fleet.
      await fleet.lockMachine(tx, machineId);
      await markOffline(deps.instances, tx, machineId, now);
      const machine = await fleet.machine(machineId, tx);
      if (machine && machine.fault === null) await fleet.setMachineFault(tx, machineId, 'offline');
    }
    let next = now;
    // A full batch (a whole rack went silent): the rest in the next job, due now, so no transaction holds the fleet's
    // lock for long.
    if (silent.length < SWEEP_BATCH) {
      const oldest = await agents.oldestOnlineReport(tx);
      if (oldest === null) {
        await kv.remove(tx, SWEEP_KV);
        return;
      }
      next = Math.max(oldest + timeout, now + 1);
    }
    await kv.set(tx, SWEEP_KV, String(next));
    await scheduler.schedule(JOB_AGENT_SWEEP, next, {}, { tx, ref: SWEEP_KV });
  }

  scheduler.register(JOB_AGENT_SWEEP, sweep);
  scheduler.register(JOB_AGENT_OFFLINE_LEGACY, (_p, { tx, now }) => ensureSweep(tx, now));
  scheduler.afterJob.push((kind) => {
    if (kind === JOB_AGENT_SWEEP) notify();
  });

  return {
    heartbeatInterval,

    /** `POST /api/v0/machines/register/`: the machine of this registration id (new or the same) and a new key. */
    async register(principal: Principal, body: AgentRegisterRequest): Promise<{ success: true; machine_id: number; machine_key: string }> {
      const hw = body.hardware;
      checkHardware(hw);
      const userId = principal.user.id;
      const key = secretToken(random, 'gpm_');
      const keyHash = sha256Hex(key);
      const now = clock.now();
      const attempt = () => transact(async (tx) => {
        const found = await agents.byRegistration(userId, body.registration_id, tx);
        if (found) {
          // The earlier key (whose reply may have been lost) is revoked by this one; a deleted machine's (revoked by
          // force_delete, perhaps while this ran) stays revoked: a deleted machine never gets a working key again.
          if (!(await agents.rekey(found.machine_id, keyHash, body.agent_version, tx))) {
            throw new ApiError('conflict', `machine ${found.machine_id} of this registration_id was deleted and cannot be registered again; `
              + 'register it as a new machine with a new registration_id (move the agent\'s agent.json out of its state directory)');
          }
          forgetKeysOf(found.machine_id);
          return found.machine_id;
        }
        await caps.admit(tx, userId, now);
        const id = await fleet.addAgentMachine(tx, userId, machineFromHardware(hw));
        await agents.insert({
          machine_id: id, user_id: userId, registration_id: body.registration_id, key_hash: keyHash, agent_version: body.agent_version,
          hardware_declared: hw.hardware_declared ? 1 : 0, hardware: JSON.stringify(hw), hardware_pending: 0, last_report_at: null, offline: 0, created_at: now,
        }, tx);
        // A machine that never reports goes offline like one that stopped reporting.
        await ensureSweep(tx, now + config.agentOfflineAfter);
        return id;
      });
      let machineId: number;
      try {
        machineId = await attempt();
      } catch (err) {
        // Two registrations of one id at once: the unique index let one insert win; this one takes its machine.
        if (err instanceof ApiError || !(await agents.byRegistration(userId, body.registration_id))) throw err;
        machineId = await attempt();
      }
      return { success: true, machine_id: machineId, machine_key: key };
    },

    /**
     * The machine a machine key belongs to, or 401. Remembered by the key's digest while the machine's change-feed
     * epoch stands: a new key or a revoke (a write of its row's key) moves it, in every process (agent-changes.ts), so a
     * held agent renewing its long-poll costs no query.
     */
    async authenticate(key: string | null): Promise<number> {
      if (key === null) throw new ApiError('auth_error', 'a machine key is required: send "Authorization: Bearer <machine key>"');
      const hash = sha256Hex(key);
      const changeFeed = await changes();
      const known = keyCache.get(hash);
      if (known && changeFeed.epoch(known.machineId) === known.epoch) return known.machineId;
      const seq = changeFeed.seq();
      const row = await agents.byKeyHash(hash);
      // Looked up by digest; the final comparison is constant-time all the same.
      if (!row || row.key_hash === null || !digestEqual(row.key_hash, hash)) throw new ApiError('auth_error', 'invalid or revoked machine key');
      // Remembered only when no change at all was heard during the read: then the machine's epoch now is the one its
      // row was read at, and a revoke committed after the read moves it.
      if (changeFeed.seq() === seq) {
        if (keyCache.size >= DESIRED_CACHE_MAX) keyCache.clear();
        keyCache.set(hash, { machineId: row.machine_id, epoch: changeFeed.epoch(row.machine_id) });
      }
      return row.machine_id;
    },

    /** Revokes the machine's key (the machine was deleted): its agent gets 401 from now on. */
    async revoke(machineId: number, tx: Tx = db): Promise<void> {
      await agents.update(machineId, { key_hash: null }, tx);
      forgetKeysOf(machineId);
    },

    desiredState,

    /**
     * For the emulator's simulated agent (src/emulator/simulated-hosts/), which acts on the same desired state and reports through the
     * same code as a real host's agent, inside the transaction of its pass (it needs no machine key, and its machines
     * have no agent row: the liveness sweep never sees them; their liveness is the simulated fleet's heartbeat).
     */
    simulated: {
      desiredOf: desiredOfSimulated,
      /**
       * The reports of simulated machines' agents, applied together (agent-observed.ts `applyReports`): each acted on
       * the desired state just read (`current`, its rows locked), so each is converged. Returns how many instances
       * changed.
       */
      applyReports: (tx: Tx, reports: readonly { observed: ObservedInstanceT[]; current: DesiredRead }[], now: number): Promise<number> =>
        applyReports(deps.instances, tx, reports.map(({ observed, current }) => ({
          rows: current.rows, observed, boots: new Map(current.state.instances.map((i) => [i.instance_id, i.boot])), converged: true, locked: true,
        })), now),
    },

    /**
     * `GET /api/v0/agent/desired/`: at once when the version is not `after`, else when it changes, else after `wait`
     * seconds. `signal` aborts once the agent hung up.
     */
    async desired(machineId: number, q: { after?: number; wait?: number }, signal?: AbortSignal) {
      const wait = q.wait ?? 0;
      const limit = deadline(wait * 1000);
      const changeFeed = await changes();
      try {
        for (;;) {
          // Read before the fingerprint: a change committed after it moves the epoch, so the held poll below hears of it.
          const epoch = changeFeed.epoch(machineId);
          // One statement. The fingerprint is read from the database, not the feed (whose notices arrive just after
          // their commits), so a request sees the writes made before it, in this process or another.
          const seen = await fingerprintOf(machineId);
          let entry = built.get(machineId);
          if (!entry || entry.seen !== seen || clock.now() >= entry.validUntil) {
            const { state, validUntil } = await desiredOf(machineId);
            if (built.size >= DESIRED_CACHE_MAX) built.clear();
            built.set(machineId, (entry = { seen, state, validUntil }));
          }
          const d = entry.state;
          if (q.after === undefined || d.version !== q.after || wait === 0 || limit.passed() || signal?.aborted || hub.closed) {
            return { success: true as const, ...d };
          }
          // Held: the whole state is rebuilt only when what it is built from changed (agent-watch.ts).
          await watch.changed(machineId, seen, () => changeFeed.epoch(machineId) !== epoch, limit.left(), signal);
        }
      } finally {
        limit.cancel();
      }
    },

    /**
     * `PUT /api/v0/agent/status/` with the machine key as presented: an online machine with nothing on it that reports
     * nothing is one statement (its desired state is the empty one); anything else takes the full path.
     */
    async report(key: string | null, body: AgentStatusRequest) {
      if (key !== null && body.observed.length === 0 && !body.hardware) {
        const hash = sha256Hex(key);
        const row = await touchIfIdle({ keyHash: hash, agentVersion: body.agent_version });
        // Found by digest; the final comparison is constant-time all the same.
        if (row && row.key_hash !== null && digestEqual(row.key_hash, hash)) {
          return { success: true as const, desired_version: EMPTY_VERSION, heartbeat_interval: heartbeatInterval };
        }
      }
      return this.status(await this.authenticate(key), body);
    },

    /** `PUT /api/v0/agent/status/`: heartbeat, observed state, hardware. */
    async status(machineId: number, body: AgentStatusRequest): Promise<{ success: true; desired_version: number; heartbeat_interval: number; hardware_pending?: true }> {
      if (body.hardware) checkHardware(body.hardware);
      const changed = await transact(async (tx) => {
        const now = clock.now();
        const row = await agents.byMachine(machineId, tx);
        if (!row) throw new ApiError('auth_error', 'invalid or revoked machine key');
        const patch: Parameters<typeof agents.update>[1] = { last_report_at: now, agent_version: body.agent_version, offline: 0 };
        if (body.hardware) {
          patch.hardware = JSON.stringify(body.hardware);
          patch.hardware_declared = body.hardware.hardware_declared ? 1 : 0;
        }
        await agents.update(machineId, patch, tx);
        if (row.offline === 1) await ensureSweep(tx, now + config.agentOfflineAfter);
        const current = await desiredOf(machineId, tx);
        // Lock order of every writer (PostgreSQL): the agent row, the machine's row (FleetApi.lockMachine: before any
        // instance, as a destroy, a stop or a rental there takes it, and only when this report locks an instance or
        // writes the machine), the instances, then the rest of the fleet.
        const pendingNow = row.hardware_pending === 1 && current.rows.length === 0;
        if (current.rows.length || body.hardware || pendingNow || row.offline === 1) await fleet.lockMachine(tx, machineId);
        // Renters are shown these ports (and the serverless router signs URLs with them): only the machine's own range.
        if (body.observed.some((o) => Object.keys(o.ports).length)) {
          const machine = current.machine ?? (await fleet.machine(machineId, tx));
          if (machine) checkObservedPorts(body.observed, machine);
        }
        const applied = await applyReport(tx, machineId, body, now, current);
        let n = applied.n;
        const held = await applyHardware(tx, row, body.hardware, current.rows.length > 0);
        if (row.offline === 1) {
          const machine = await fleet.machine(machineId, tx);
          if (machine?.fault === 'offline') await fleet.setMachineFault(tx, machineId, null);
          n++;
        }
        // Applying a report changes actual states only, never what the desired state is built from: its version holds.
        return { n, version: applied.version, held };
      });
      if (changed.n) notify();
      return { success: true, desired_version: changed.version, heartbeat_interval: heartbeatInterval, ...(changed.held ? { hardware_pending: true as const } : {}) };
    },

    /** `PUT /api/v0/agent/logs/{request_id}/`: the agent's answer to a log request of its machine. */
    async answerLogs(machineId: number, requestId: string, body: AgentLogAnswer): Promise<{ success: true }> {
      const row = await agents.logRequest(requestId);
      if (!row || row.machine_id !== machineId) throw new ApiError('not_found', `log request ${requestId} not found`);
      if (row.answered_at === null) {
        await agents.answerLogRequest(requestId, { text: body.text.slice(-LOG_TEXT_MAX_CHARS), error: body.error ?? null, answered_at: clock.now() });
        notify();
      }
      return { success: true };
    },

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

    /** The instances feature's log hook (instances-ports.ts AgentLogsPort). */
    logs: {
      async requested(req: { logRequestId: number; instanceId: number; machineId: number | null; tail: number | null; filter: string | null }): Promise<void> {
        if (req.machineId === null || !(await agents.byMachine(req.machineId))) return;
        await agents.insertLogRequest({
          request_id: `log_${random.bytes(16).toString('hex')}`, machine_id: req.machineId, instance_id: req.instanceId,
          log_request_id: req.logRequestId, tail: req.tail, filter: req.filter, text: null, error: null, answered_at: null,
          expires_at: clock.now() + LOG_ANSWER_TTL_S,
        });
        notify();
      },

      async textOf(logRequestId: number): Promise<string | undefined> {
        let row = await agents.logRequestOf(logRequestId);
        if (!row) return undefined;
        const limit = deadline(LOG_WAIT_MS);
        try {
          while (row && row.answered_at === null && !limit.passed() && !hub.closed) {
            await hub.next(POLL_MS);
            row = await agents.logRequestOf(logRequestId);
          }
        } finally {
          limit.cancel();
        }
        if (!row || row.answered_at === null) throw new ApiError('not_found', 'the host has not sent this log yet; try again in a moment');
        if (row.text === '' && row.error) return `${row.error}\n`;
        return row.text ?? '';
      },
    },
  };
}

export type AgentService = ReturnType<typeof agentServiceFactory>;
export type { AgentHardwareT };
