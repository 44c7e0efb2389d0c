/**
 * Builds the instances feature from its dependencies (called once from services.ts) and registers its background
 * jobs. Its hooks (credit exhausted, host lost, team delete) and what hosts may do to instances are returned for the root to
 * wire.
 */
import type { Config } from '../config.js';
import type { Clock } from '../platform/clock.js';
import type { SecretBox } from '../platform/crypto.js';
import type { Store, Tx } from '../platform/db/connect.js';
import type { Scope } from '../platform/auth.js';
import { ApiError } from '../platform/errors.js';
import type { Random } from '../platform/random.js';
import type { Scheduler } from '../platform/scheduler.js';
import type { BillingApi, CreditExhaustedHook } from '../billing/billing-contract.js';
import type { MachinesApi } from '../machines/machines-contract.js';
import type { KeysService } from '../keys/keys-service.js';
import type { KeysContract } from '../keys/keys-contract.js';
import { createFactory } from './instances-create.js';
import { EventsHub, instanceEventsFactory } from './instances-events.js';
import { instanceJobsFactory } from './instances-jobs.js';
import { transact } from './instances-batch.js';
import type { InstanceHostsPort, InstancesForHosts } from './instances-hosts-contract.js';
import { contractOf, lifecycleFactory, type DesiredChangeHook } from './instances-lifecycle.js';
import { instancesMaintenance } from './instances-maintenance.js';
import type { SshKeysPort, AccountEnvPort } from './instances-ports.js';
import type { PlacedInstance, TemplatesPort, VolumesPort } from './instances-contract.js';
import { instancesServiceFactory, type DestroyHook } from './instances-service.js';
import type { GpuStatesPort } from './instances-gpu-view.js'; // issue 33 (telemetry)
import { instancesStore } from './instances-store.js';
import { instanceQueriesFactory } from './instances-queries.js';
import { instanceExtrasFactory } from './instances-extras.js';
import { instanceExtrasStore } from './instances-extras-store.js';
import { instanceCommandsFactory } from './instances-commands.js';

export interface InstancesModuleDeps {
  store: Store;
  clock: Clock;
  random: Random;
  scheduler: Scheduler;
  config: Config;
  secretBox: SecretBox;
  keys: Pick<KeysContract, 'moveInstanceKeys' | 'revokeInstanceKeys'>;
  keysService: KeysService;
  fleet: MachinesApi;
  billing: BillingApi;
  templates: TemplatesPort;
  sshKeys: SshKeysPort;
  volumes: VolumesPort;
  /** The account environment variables new instances start with. */
  accountEnv?: AccountEnvPort;
  /** Throws ApiError when the account may not rent (a host-only subaccount). */
  mayRent?: (userId: number, tx?: Tx) => Promise<void>;
  /** Issue 33 (telemetry): agent machines' GPU samples for the instance objects (the agent server). */
  gpuStates?: GpuStatesPort;
}

export function instancesModule(deps: InstancesModuleDeps) {
  const db = deps.store.db;
  const store = instancesStore(db, deps.store.dialect, { machineLock: (machineId) => deps.fleet.machineLockCondition(machineId) });
  const hub = new EventsHub();
  const notify = () => hub.notify();
  const desiredChangeHooks: DesiredChangeHook[] = [];
  const lifecycle = lifecycleFactory({ store, fleet: deps.fleet, billing: deps.billing, scheduler: deps.scheduler, desiredChangeHooks, stopGraceS: deps.config.stopGraceSeconds });
  const creator = createFactory({ ...deps, db, store, lifecycle, notify });
  const destroyHooks: DestroyHook[] = [];
  // The host of each instance's machine (instances-hosts-contract.ts), wired by the root with `useHosts` once the
  // hosts' implementations are built (they are built from this feature's `real` and `forHosts`).
  let hostsPort: InstanceHostsPort | undefined;
  const wired = (): InstanceHostsPort => {
    if (!hostsPort) throw new Error('instances: no host port wired (services.ts calls useHosts)');
    return hostsPort;
  };
  const hosts: InstanceHostsPort = {
    execute: (tx, cmd) => wired().execute(tx, cmd),
    assertCanSnapshot: (tx, req) => wired().assertCanSnapshot(tx, req),
    logsRequested: (req) => wired().logsRequested(req),
    logText: (req) => wired().logText(req),
  };
  const service = instancesServiceFactory({ ...deps, db, store, lifecycle, notify, destroyHooks, hosts });
  const events = instanceEventsFactory({ store, hub, clock: deps.clock, streamsPerUser: deps.config.eventStreamsPerUser });
  const queries = instanceQueriesFactory({ store, all: (p) => service.all(p) });
  const jobs = instanceJobsFactory({ store, lifecycle, fleet: deps.fleet, scheduler: deps.scheduler, clock: deps.clock, notify });
  // Reboot, recycle, update; execute and snapshots (docs/spec/client-compat-more.md §c).
  const extras = instanceExtrasFactory({ ...deps, db, store, lifecycle, notify });
  const commands = instanceCommandsFactory({ ...deps, db, store, extras: instanceExtrasStore(db), hosts, hub, notify });
  const forHosts: InstancesForHosts = {
    async write(fn) {
      const out = await transact(db, fn);
      notify();
      return out;
    },
    find: (id, tx) => store.find(id, tx),
    findAny: (id, tx) => store.findAny(id, tx),
    lock: (id, tx) => store.lock(id, tx),
    listOnMachine: (machineId, tx) => store.listOnMachine(machineId, tx),
    eventsOf: (id, tx) => store.eventsOf(id, tx),
    markLost: jobs.markLost,
    hostLost: jobs.hostLost,
  };

  jobs.register();
  // Out of credit: compute stops (disk keeps accruing, as on real clouds); the user starts it again after a top-up.
  // An instance its prepaid deposit still pays keeps running (billing-deposits.ts).
  const creditExhausted: CreditExhaustedHook = async (tx, { userId, at, lockBilling, covered }) => {
    const rows = await store.meantToRunOf(userId, tx);
    // The order every request takes (no deadlock on PostgreSQL): their machines' rows first, in id order, as a stop
    // or destroy takes its machine's before its instance (MachinesApi.lockMachine); then all the instances, then
    // billing, then stops.
    const machines = [...new Set(rows.flatMap((r) => (r.machine_id === null ? [] : [r.machine_id])))].sort((a, b) => a - b);
    for (const machineId of machines) await deps.fleet.lockMachine(tx, machineId);
    const locked = [];
    for (const { id } of rows) {
      const inst = await store.lock(id, tx);
      if (inst && inst.actual_status !== 'stopped' && !covered?.has(contractOf(inst.id))) locked.push(inst);
    }
    await lockBilling?.();
    for (const inst of locked) {
      await lifecycle.stop(tx, inst, at, 'stopped: credit exhausted');
    }
  };

  return {
    /** For the hosting feature: a maintenance window's start stops the machine's instances with notice; its end resumes them. */
    maintenance: instancesMaintenance({ store, lifecycle, fleet: deps.fleet }),
    ...service,
    create: creator.create,
    createIn: creator.createIn,
    events,
    hub,
    /** Filter values, contract lookup, and the instance a prepay names (instances-queries.ts). */
    queries,
    /** Reboot, recycle, update (instances-extras.ts). */
    extras,
    /** Execute and take snapshot (instances-commands.ts). */
    commands,
    /** Those of `ids` not destroyed (the serverless autoscaler's workers). */
    liveIds: (tx: Tx, ids: number[]): Promise<number[]> => store.liveIds(ids, tx),
    /**
     * The running ones of `ids` and where they listen (the serverless router): their machine's public address, the
     * host ports of their container ports (`{"3000/tcp": [{HostIp, HostPort}]}`) and their environment variables.
     */
    async runningAddresses(tx: Tx, ids: number[]): Promise<WorkerAddress[]> {
      const out: WorkerAddress[] = [];
      for (const r of await store.runningOf(ids, tx)) {
        const machine = r.machine_id === null ? undefined : await deps.fleet.machine(r.machine_id, tx);
        if (!machine || !r.ports) continue;
        out.push({
          id: r.id, public_ipaddr: machine.public_ipaddr, ports: JSON.parse(r.ports), env: JSON.parse(r.env),
          direct_port_start: machine.direct_port_start, direct_port_count: machine.direct_port_count,
          agent: machine.agent, // issue 33 (serverless): a real host's worker is routed by its reports
        });
      }
      return out;
    },
    /** The live ones of `ids` with their state and times (the serverless autoscaler's worker list). */
    workerStates: (tx: Tx, ids: number[]): Promise<WorkerState[]> => store.statesOf(ids, tx),
    /** Live instances per state (metrics). */
    countByState: () => store.countByState(),
    /** Billing hook: the user's credit ran out. */
    creditExhausted,
    /** For real hosts (src/agent-server/): their agents' reports drive the lifecycle of the instances on their machines. */
    real: { store, lifecycle, notify, commands: commands.agent },
    /** For the hosting feature: the instances placed on machines (earnings, force_delete, renters' maintenance view). */
    onMachines: (machineIds: readonly number[], tx: Tx = db): Promise<PlacedInstance[]> => store.placedOn(machineIds, tx),
    /**
     * Another feature's work when a machine's desired state changes (an instance appears, boots, should stop or run,
     * gets a new generation, goes), inside the changing transaction: a host's agent that runs in the server (wired by the root).
     */
    onDesiredChange(hook: DesiredChangeHook): void {
      desiredChangeHooks.push(hook);
    },
    /** Another feature's work when an instance is destroyed, in the destroy's transaction (scheduled jobs go with it). */
    onDestroy(hook: DestroyHook): void {
      destroyHooks.push(hook);
    },
    /**
     * Whether `id` is a live instance of `scope`, its row locked until `tx` ends on PostgreSQL: something made about it
     * in `tx` (a scheduled job) either sees a destroy that came first, or makes the destroy wait and then go with it.
     */
    async lockInScope(scope: Scope, id: number, tx: Tx): Promise<boolean> {
      return Boolean(await store.lockInScope(id, scope, tx));
    },
    /**
     * A note in a running instance's status bar (`status_msg`): how a copy into it goes (src/copy/, issue 31). An
     * instance in another state keeps its own message, which says why it is not running; its host's next change of
     * state replaces the note.
     */
    async noteStatus(id: number, msg: string): Promise<void> {
      await transact(db, async (tx) => {
        const inst = await store.lock(id, tx);
        if (inst?.actual_status === 'running') await store.update(id, { status_msg: msg }, tx);
      });
      notify();
    },
    /** What the hosts' implementations may read of instances and do to them (instances-hosts-contract.ts). */
    forHosts,
    /** Wires the host of each instance's machine (the root, once the hosts' implementations are built). */
    useHosts(port: InstanceHostsPort): void {
      hostsPort = port;
    },
    /**
     * Team member removal hook: the team's live instances still paid by the member (rented before a team's work was
     * paid by its owner, issue 29 item 17) become the owner's, billing included from `at`, so the member pays for
     * nothing they can no longer reach.
     */
    async handOver(tx: Tx, m: { teamId: number; fromUserId: number; toUserId: number; at: number }): Promise<void> {
      for (const id of await store.liveOfTeam(m.teamId, m.fromUserId, tx)) {
        const inst = await store.lock(id, tx);
        if (!inst || inst.user_id !== m.fromUserId) continue;
        await store.update(id, { user_id: m.toUserId }, tx);
        await deps.keys.moveInstanceKeys(id, m.fromUserId, m.toUserId, tx);
        await deps.billing.changePayer(tx, { contract: contractOf(id), userId: m.toUserId, at: m.at });
      }
    },
    /**
     * Team deletion hook: a team that still has instances is not deleted (409), as a real cloud refuses to delete a
     * project with live resources; destroying them silently would lose work and disk, leaving them would orphan them.
     */
    async refuseTeamDelete(teamId: number, tx: Tx): Promise<void> {
      const live = await store.liveOfTeam(teamId, undefined, tx);
      if (live.length) {
        const ids = live.slice(0, 10).join(', ');
        throw new ApiError('conflict', `the team still has ${live.length} instance(s) (${ids}${live.length > 10 ? ', …' : ''}): destroy them first`);
      }
    },
  };
}

export type InstancesModule = ReturnType<typeof instancesModule>;

/** A live instance's state and times (`workerStates`). */
export interface WorkerState {
  id: number;
  actual_status: string | null;
  created_at: number;
  running_since: number | null;
  disk: number;
}

/** A running instance's address (`runningAddresses`). */
export interface WorkerAddress {
  id: number;
  public_ipaddr: string;
  ports: Record<string, { HostIp: string; HostPort: string }[]>;
  env: Record<string, string>;
  /** The machine's declared host port range (the serverless router routes only from it). */
  direct_port_start: number;
  direct_port_count: number;
  /** Run by `gpuplane agent` on a real host (else simulated). */
  agent?: boolean;
}
