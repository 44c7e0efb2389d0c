/**
 * State changes of an instance (spec: States and transitions; contract §6): boots, stop/start, outbid and resume, and
 * the control plane's own states (unknown, offline). Every change happens inside the caller's transaction, writes an
 * `instance_events` row and keeps the fleet's GPU holds and the billing meters in step with `actual_status`. A boot
 * only asks: the machine's agent makes the container (whichever host runs it: instances-hosts-contract.ts),
 * and its reports move the instance to loading and running (src/agent-server/agent-server-observed.ts).
 */
import type { Tx } from '../platform/db/connect.js';
import type { Scheduler } from '../platform/scheduler.js';
import type { BillingApi, MeterStart } from '../billing/billing-contract.js';
import type { MachinesApi } from '../machines/machines-contract.js';
import type { InstanceEventRow, InstancePatch, InstanceRow, InstanceState, InstancesStore } from './instances-store.js';

/** From a desired-state change to the host acting on it (provisioning: the host accepts the container). */
export const PROVISION_DELAY_S = 1;
/** A host silent this long after its instances turned `unknown` is `offline`. */
export const HEARTBEAT_OFFLINE_AFTER_S = 300;
/** Average month for $/GB/month disk prices: the platform's one constant (money.ts), shared with offer search. */
export { HOURS_PER_MONTH } from '../platform/money.js';

export const JOB_OFFLINE = 'instance.offline';
export const refOf = (id: number) => `instance:${id}`;
export const contractOf = (id: number) => `instance-${id}`;

export const OUTBID_MSG = 'outbid: a higher bid or an on-demand rental took its GPUs; it resumes when they are free again';
/** An instance stopped for its host's maintenance window (instances-maintenance.ts): its status_msg starts so. */
export const MAINT_STOP_PREFIX = 'host maintenance';
/** A running instance its renter stopped: the start of its notice (stopNoticeMsg). */
export const RENTER_STOP_MSG = 'stopped by its renter';
/** Seconds between SIGTERM and SIGKILL unless the operator set GPUPLANE_STOP_GRACE_SECONDS (config.ts). */
export const STOP_GRACE_DEFAULT_S = 30;

/**
 * The notice of a running instance's stop (issue 33 item 3), in its `status_msg` and so in its event stream: why, then
 * when and how its host stops the container. The host's agent gets the same words in the desired state
 * (`stop_reason`) and writes them into the container (src/agent/stop-notice.ts) just before SIGTERM.
 */
export function stopNoticeMsg(why: string, at: number, graceS: number): string {
  const when = new Date(Math.floor(at) * 1000).toISOString().replace(/\.000Z$/, 'Z');
  const how = graceS > 0 ? `SIGTERM now, SIGKILL after ${graceS} s` : 'SIGTERM and SIGKILL now (no grace period)';
  return `${why}; stopping at ${when}: ${how}`;
}
/** States from which an instance never reaches running by itself (spec: destroy and retry). */
export const FAILED_STATES = ['exited', 'unknown', 'offline'] as const;
/** States in which the control plane no longer hears the instance's host (spec: no heartbeat, host disconnected). */
const HOST_LOST: readonly (string | null)[] = ['unknown', 'offline'];
/** A stop its host has yet to carry out (`stop` while the host is not heard). */
export const STOP_PENDING_MSG =
  'stop pending on the host: it is not reporting, so its container runs on until the host is back and stops it; compute billing has stopped';

/**
 * A stop asked for while the instance's host was not heard, not yet confirmed by the host: meant to be stopped, last
 * observed otherwise (every other stop writes `stopped` to both).
 */
export function stopPending(inst: Pick<InstanceRow, 'intended_status' | 'actual_status'>): boolean {
  return inst.intended_status === 'stopped' && inst.actual_status !== 'stopped';
}

/** Whether the machine should have the instance's container running: meant to run and holding its GPUs. */
export function wantsRunning(inst: Pick<InstanceRow, 'intended_status' | 'actual_status' | 'gpu_indexes'>): boolean {
  return inst.intended_status === 'running' && inst.actual_status !== 'stopped' && (JSON.parse(inst.gpu_indexes) as number[]).length > 0;
}

/**
 * Whether a state change changes what the machine's desired state says of the instance (src/agent-server/agent-server-desired.ts):
 * it appears (its first change), goes (destroyed), gets a new `boot` (a boot begins: status null), or its container
 * should run where it should not, or the other way.
 */
function changesDesired(before: InstanceRow, after: InstanceRow): boolean {
  return before.state_version === 0 || after.actual_status === null || after.actual_status === 'destroyed' || wantsRunning(before) !== wantsRunning(after);
}

/** Told of every desired-state change of a machine, inside the changing transaction (an agent that runs in the server). */
export type DesiredChangeHook = (tx: Tx, machineId: number, at: number) => Promise<void>;

export interface LifecycleDeps {
  store: InstancesStore;
  fleet: MachinesApi;
  billing: BillingApi;
  scheduler: Scheduler;
  /** Filled in by the composition root (instances-module `onDesiredChange`). */
  desiredChangeHooks?: readonly DesiredChangeHook[];
  /** The operator's grace between SIGTERM and SIGKILL, named in a stop's notice. @default STOP_GRACE_DEFAULT_S */
  stopGraceS?: number;
}

export type StatePatch = Pick<InstancePatch, 'ports' | 'running_since' | 'gpu_indexes'> & {
  actual_status: string | null;
  intended_status?: string;
  status_msg?: string | null;
  /** A destroy: written with the state, in the same statement. */
  destroyed_at?: number;
  /**
   * A rent's first state: where the allocation placed the instance, written with it in the same statement (the row
   * was inserted before the allocation, which needs its id).
   */
  placement?: Pick<InstancePatch, 'machine_id' | 'host_id' | 'offer_snapshot' | 'api_key_sealed'>;
};

export function lifecycleFactory({ store, fleet, billing, scheduler, desiredChangeHooks = [], stopGraceS = STOP_GRACE_DEFAULT_S }: LifecycleDeps) {
  /** A running container is told why and when it stops; one that is not running has nothing to be told. */
  const noticeOf = (inst: InstanceRow, why: string, at: number) => (inst.actual_status === 'running' ? stopNoticeMsg(why, at, stopGraceS) : null);

  /** The machine's desired state changed (a new generation, say): its agent is told, if it listens here. */
  async function desiredChanged(tx: Tx, machineId: number | null, at: number): Promise<void> {
    if (machineId === null) return;
    for (const hook of desiredChangeHooks) await hook(tx, machineId, at);
  }

  /** The instance's row after a state change, and the change's event. */
  function changed(inst: InstanceRow, patch: Omit<StatePatch, 'placement'>, at: number): { next: InstanceRow; event: Omit<InstanceEventRow, 'id'> } {
    // A key given as undefined leaves the column as it was (as `store.update` leaves it out).
    const set = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
    const next: InstanceRow = {
      ...inst,
      ...set,
      intended_status: patch.intended_status ?? inst.intended_status,
      status_msg: patch.status_msg === undefined ? inst.status_msg : patch.status_msg,
      state_version: inst.state_version + 1,
    } as InstanceRow;
    const event = {
      instance_id: inst.id,
      user_id: inst.user_id,
      team_id: inst.team_id,
      actual_status: next.actual_status,
      intended_status: next.intended_status,
      status_msg: next.status_msg,
      at,
    };
    return { next, event };
  }

  const stateOf = (r: InstanceRow): InstanceState => ({
    id: r.id,
    actual_status: r.actual_status,
    intended_status: r.intended_status,
    status_msg: r.status_msg,
    ports: r.ports,
    running_since: r.running_since,
    gpu_indexes: r.gpu_indexes,
    state_version: r.state_version,
  });

  /** Moves the instance to a state and records the event. */
  async function transition(tx: Tx, inst: InstanceRow, { placement, ...patch }: StatePatch, at: number): Promise<InstanceRow> {
    const { next, event } = changed({ ...inst, ...placement }, patch, at);
    const { id, ...state } = stateOf(next);
    const destroyed = patch.destroyed_at === undefined ? {} : { destroyed_at: patch.destroyed_at };
    await store.updateWithEvent(id, { ...state, ...destroyed, ...placement }, event, tx);
    if (changesDesired(inst, next)) await desiredChanged(tx, inst.machine_id, at);
    return next;
  }

  /**
   * `transition` for many instances at once (each at most once), in three statements whatever their number: their
   * rows, their events (in the order given), and each machine whose desired state changed told once. The rows come
   * back in the order given.
   */
  async function transitionMany(tx: Tx, changes: readonly { inst: InstanceRow; patch: StatePatch }[], at: number): Promise<InstanceRow[]> {
    if (changes.length <= 1) return Promise.all(changes.map((c) => transition(tx, c.inst, c.patch, at)));
    const done = changes.map((c) => changed(c.inst, c.patch, at));
    await store.updateStates(done.map((d) => stateOf(d.next)), tx);
    await store.insertEvents(done.map((d) => d.event), tx);
    const machines = new Set(changes.filter((c, i) => changesDesired(c.inst, done[i].next)).map((c) => c.inst.machine_id));
    for (const machineId of machines) await desiredChanged(tx, machineId, at);
    return done.map((d) => d.next);
  }

  /**
   * Starts a boot: status null, meant to run. The machine's agent acts on the new `boot` of its desired state (pull and
   * create, start, restart); its reports move the instance to loading and running, with ports and compute billing.
   */
  async function boot(
    tx: Tx,
    inst: InstanceRow,
    at: number,
    msg: string | null = null,
    opts: { created?: boolean; placement?: StatePatch['placement'] } = {},
  ): Promise<InstanceRow> {
    // An instance created in this transaction has no jobs to cancel yet.
    if (!opts.created) await scheduler.cancel(refOf(inst.id), { tx });
    return transition(tx, inst, { actual_status: null, intended_status: 'running', status_msg: msg, ports: null, running_since: null, placement: opts.placement }, at);
  }

  /**
   * Restarts an instance that holds its GPUs (reboot, recycle, update): compute billing stops, and it boots again in
   * place as a start does (compute billing from running). The new boot (and a new generation, when the caller bumped
   * it) makes the agent restart or recreate the container.
   */
  async function reboot(tx: Tx, inst: InstanceRow, at: number, msg: string): Promise<InstanceRow> {
    await billing.stopMeter(tx, { contract: contractOf(inst.id), kind: 'gpu', at });
    return boot(tx, inst, at, msg);
  }

  const gpuMeter = (inst: InstanceRow, at: number): MeterStart => {
    const offer = JSON.parse(inst.offer_snapshot) as Record<string, unknown>;
    return {
      contract: contractOf(inst.id),
      type: 'instance',
      kind: 'gpu',
      userId: inst.user_id,
      teamId: inst.team_id,
      rateMicroPerHour: inst.gpu_rate_micro,
      at,
      description: `${String(offer.gpu_name ?? 'GPU')} x${inst.num_gpus} instance ${inst.id}${inst.is_bid ? ' (bid)' : ''}`,
      metadata: { label: inst.label, template_id: inst.template_id },
    };
  };

  async function startGpuMeter(tx: Tx, inst: InstanceRow, at: number): Promise<void> {
    await billing.startMeter(tx, gpuMeter(inst, at));
  }

  /** `startGpuMeter` for many instances at once (billing's `startMeters`: a few statements for all). */
  async function startGpuMeters(tx: Tx, insts: readonly InstanceRow[], at: number): Promise<void> {
    await billing.startMeters(tx, insts.map((i) => gpuMeter(i, at)));
  }

  async function startDiskMeter(tx: Tx, inst: InstanceRow, at: number): Promise<void> {
    await billing.startMeter(tx, {
      contract: contractOf(inst.id),
      type: 'instance',
      kind: 'disk',
      userId: inst.user_id,
      teamId: inst.team_id,
      rateMicroPerHour: inst.disk_rate_micro,
      at,
      description: `${inst.disk} GB disk, instance ${inst.id}`,
      metadata: { label: inst.label, template_id: inst.template_id },
    });
  }

  /**
   * Leaves the running path: cancels its jobs, frees the GPUs (unless `keepGpus`), stops compute billing.
   * Disk billing continues (spec: stop stops compute billing; disk charges continue).
   */
  async function halt(
    tx: Tx,
    inst: InstanceRow,
    at: number,
    to: { actual_status: string; intended_status?: string; status_msg: string | null; placement?: StatePatch['placement'] },
    keepGpus = false,
  ): Promise<InstanceRow> {
    await scheduler.cancel(refOf(inst.id), { tx });
    if (!keepGpus) await fleet.release(tx, inst.id);
    await billing.stopMeter(tx, { contract: contractOf(inst.id), kind: 'gpu', at });
    return transition(tx, inst, { ...to, ports: null, running_since: null, ...(keepGpus ? {} : { gpu_indexes: '[]' }) }, at);
  }

  /**
   * Stops the instance (PUT state `stopped`, credit exhausted): compute billing stops and its GPUs are freed at once
   * (spec: a stop stops compute billing), and its host stops the container when it acts on the new desired state.
   * While the control plane does not hear the host (`unknown`, `offline`), that waits for the host's return, and the
   * instance says so rather than `stopped`: `intended_status` (and `next_state`) `stopped`, `actual_status` as last
   * observed, the message naming the wait. The host's first report once back that shows the container not running
   * makes it `stopped` (agent-observed.ts). So a client polling `actual_status` for `stopped` sees it only once the
   * container has stopped, which is when it is true; vast.py's checks of an instance read `intended_status` before
   * `actual_status` (its test-instance cleanup and existence checks), so it sees the stop at once. `cur_state` follows
   * `actual_status` as ever (`stopped` for an unknown or offline instance).
   */
  async function stop(tx: Tx, inst: InstanceRow, at: number, msg: string | null = null): Promise<InstanceRow> {
    if (HOST_LOST.includes(inst.actual_status)) {
      const status_msg = msg === null ? STOP_PENDING_MSG : `${msg}; ${STOP_PENDING_MSG}`;
      return halt(tx, inst, at, { actual_status: inst.actual_status!, intended_status: 'stopped', status_msg });
    }
    const notice = noticeOf(inst, msg ?? RENTER_STOP_MSG, at);
    return halt(tx, inst, at, { actual_status: 'stopped', intended_status: 'stopped', status_msg: notice ?? msg });
  }

  /**
   * Bid instances displaced by an allocation: stopped, still meant to run, and told why. Their rows are locked after
   * the fleet's: safe because the caller took the machine's row first (MachinesApi.lockMachine; a rental's allocation
   * does), as does every transaction that changes holds on the machine.
   */
  async function outbid(tx: Tx, ids: number[], at: number): Promise<void> {
    for (const id of ids) {
      const inst = await store.lock(id, tx);
      if (!inst) continue;
      await halt(tx, inst, at, { actual_status: 'stopped', intended_status: 'running', status_msg: noticeOf(inst, OUTBID_MSG, at) ?? OUTBID_MSG });
    }
  }

  /**
   * GPUs on the machine were freed: outbid instances there, highest bid first, take them back if they can.
   * A resumed instance boots again. Lock order: the caller holds the machine's row, taken before any instance
   * (MachinesApi.lockMachine): these instances are locked after the fleet's rows, and no transaction that would change
   * them or the machine's holds can be holding one of them while it waits for the machine.
   */
  async function resumeWaiting(tx: Tx, machineId: number | null, at: number, assertCredit: (userId: number) => Promise<void>): Promise<void> {
    if (machineId === null) return;
    const waiting = (await store.waitingOnMachine(machineId, tx))
      .sort((a, b) => (b.bid_per_gpu_micro ?? 0) - (a.bid_per_gpu_micro ?? 0) || a.id - b.id);
    for (const candidate of waiting) {
      const inst = await store.lock(candidate.id, tx);
      if (!inst || inst.actual_status !== 'stopped' || inst.intended_status !== 'running') continue;
      // Stopped for a maintenance window: it waits for the window's end (instances-maintenance.ts), not for GPUs.
      if (inst.status_msg?.startsWith(MAINT_STOP_PREFIX)) continue;
      try {
        await assertCredit(inst.user_id);
      } catch {
        continue;
      }
      const got = await fleet.reallocate(tx, {
        instanceId: inst.id,
        machineId,
        numGpus: inst.num_gpus,
        kind: inst.is_bid ? 'bid' : 'ondemand',
        bidPerGpuMicro: inst.bid_per_gpu_micro ?? undefined,
      });
      if (!got) continue;
      await outbid(tx, got.outbid, at);
      await boot(tx, { ...inst, gpu_indexes: JSON.stringify(got.gpuIndexes) }, at, 'resumed: its GPUs are free again');
    }
  }

  return { transition, transitionMany, desiredChanged, boot, reboot, halt, stop, outbid, resumeWaiting, startDiskMeter, startGpuMeter, startGpuMeters, noticeOf };
}

export type Lifecycle = ReturnType<typeof lifecycleFactory>;
