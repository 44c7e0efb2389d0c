/**
 * State changes of an instance (spec: States and transitions; contract §6): boot progress, stop/start, outbid and
 * resume, faults. Every change happens inside the caller's transaction, writes an `instance_events` row and keeps
 * the fleet's GPU holds and the billing meters in step with `actual_status`.
 */
import type { Config } from '../config.js';
import type { Tx } from '../platform/db/connect.js';
import { SeededRandom } from '../platform/random.js';
import type { Scheduler } from '../platform/scheduler.js';
import type { BillingApi } from '../billing/billing-contract.js';
import type { FleetApi, MachineInfo } from '../fleet/fleet-contract.js';
import { directPortSlice, RUNTYPE_PORTS, type Runtype } from './instances-request.js';
import type { InstancePatch, InstanceRow, InstancesStore } from './instances-store.js';

/** From creation to `loading` (provisioning: the host accepts the container). */
export const PROVISION_DELAY_S = 1;
/** A host silent this long after its instances turned `unknown` is `offline`. */
export const HEARTBEAT_OFFLINE_AFTER_S = 300;
/** Average month for $/GB/month disk prices: the platform's one constant (money.ts), shared with offer search. */
export { HOURS_PER_MONTH } from '../platform/money.js';
/** SSH through the service's proxy: port PROXY_SSH_PORT_BASE + instance id on the machine's proxy host. */
export const PROXY_SSH_PORT_BASE = 10_000;

/**
 * One job kind drives every boot: it advances all instances whose `boot_step_at` is due, in one transaction, and
 * schedules itself for the next step. Per-instance jobs would cost a commit per boot step.
 */
export const JOB_BOOT = 'instance.boot';
/** Boot steps advanced per boot job run; more are left for the next run, due at once. */
export const BOOT_BATCH = 500;
export const JOB_OFFLINE = 'instance.offline';
export const refOf = (id: number) => `instance:${id}`;
export const contractOf = (id: number) => `instance-${id}`;

export const OUTBID_MSG = 'outbid: a higher bid or an on-demand rental took its GPUs; it resumes when they are free again';
/** States from which an instance never reaches running by itself (spec: destroy and retry). */
export const FAILED_STATES = ['exited', 'unknown', 'offline'] as const;

export interface LifecycleDeps {
  store: InstancesStore;
  fleet: FleetApi;
  billing: BillingApi;
  scheduler: Scheduler;
  config: Config;
}

type StatePatch = Pick<InstancePatch, 'ports' | 'running_since' | 'gpu_indexes' | 'boot_step_at' | 'boot_running_at'> & {
  actual_status: string | null;
  intended_status?: string;
  status_msg?: string | null;
};

export function lifecycleFactory({ store, fleet, billing, scheduler, config }: LifecycleDeps) {
  /** Moves the instance to a state and records the event. */
  async function transition(tx: Tx, inst: InstanceRow, patch: StatePatch, at: number): Promise<InstanceRow> {
    const next: InstanceRow = {
      ...inst,
      ...patch,
      intended_status: patch.intended_status ?? inst.intended_status,
      status_msg: patch.status_msg === undefined ? inst.status_msg : patch.status_msg,
      state_version: inst.state_version + 1,
    } as InstanceRow;
    await store.update(
      inst.id,
      {
        actual_status: next.actual_status,
        intended_status: next.intended_status,
        status_msg: next.status_msg,
        ports: next.ports,
        running_since: next.running_since,
        gpu_indexes: next.gpu_indexes,
        state_version: next.state_version,
        boot_step_at: next.boot_step_at,
        boot_running_at: next.boot_running_at,
      },
      tx,
    );
    await store.insertEvent(
      {
        instance_id: inst.id,
        user_id: inst.user_id,
        team_id: inst.team_id,
        actual_status: next.actual_status,
        intended_status: next.intended_status,
        status_msg: next.status_msg,
        at,
      },
      tx,
    );
    return next;
  }

  /** Boot time of one boot of one instance: uniform in the configured range, reproducible from the seed. */
  function bootSeconds(inst: InstanceRow): number {
    const { min, max } = config.simBootSeconds;
    return new SeededRandom((config.seed * 2654435761 + inst.id * 40503 + inst.state_version) >>> 0).range(min, Math.max(min, max));
  }

  /** Makes sure a boot job runs at `dueAt` or earlier (one job serves every instance's steps). */
  async function ensureBootJob(tx: Tx, dueAt: number, after = -Infinity): Promise<void> {
    const pending = await scheduler.nextDue(JOB_BOOT, after, tx);
    if (pending === null || pending > dueAt) await scheduler.schedule(JOB_BOOT, dueAt, {}, { tx });
  }

  /** Starts a boot: null now, loading after provisioning, running after the boot time. */
  async function boot(tx: Tx, inst: InstanceRow, at: number, msg: string | null = null, opts: { created?: boolean } = {}): Promise<InstanceRow> {
    // An instance created in this transaction has no jobs to cancel yet.
    if (!opts.created) await scheduler.cancel(refOf(inst.id), { tx });
    // On a real host (gpuplane agent) the agent's reports drive the boot, not simulated timers (src/hosts/).
    const real = inst.machine_id !== null && (await fleet.machine(inst.machine_id, tx))?.agent === true;
    const total = Math.max(bootSeconds({ ...inst, state_version: inst.state_version + 1 }), PROVISION_DELAY_S);
    const next = await transition(
      tx,
      inst,
      {
        actual_status: null, intended_status: 'running', status_msg: msg, ports: null, running_since: null,
        boot_step_at: real ? null : at + PROVISION_DELAY_S, boot_running_at: real ? null : at + total,
      },
      at,
    );
    if (!real) await ensureBootJob(tx, at + PROVISION_DELAY_S);
    return next;
  }

  /**
   * Restarts an instance that holds its GPUs (reboot, recycle, update): compute billing stops, and it boots again in
   * place as a start does (null, loading, running; compute billing from running). On a real host the new boot (and a
   * new generation, when the caller bumped it) makes the agent restart or recreate the container.
   */
  async function reboot(tx: Tx, inst: InstanceRow, at: number, msg: string): Promise<InstanceRow> {
    await billing.stopMeter(tx, { contract: contractOf(inst.id), kind: 'gpu', at });
    return boot(tx, inst, at, msg);
  }

  /** Advances every due boot step (the JOB_BOOT handler), then schedules the next run. */
  async function bootStep(tx: Tx, now: number): Promise<void> {
    const due = await tx.selectFrom('instances').select('id').where('boot_step_at', '<=', now).where('destroyed_at', 'is', null)
      .orderBy('boot_step_at').orderBy('id').limit(BOOT_BATCH).execute();
    for (const { id } of due) {
      const inst = await store.lock(id, tx);
      if (!inst || inst.boot_step_at === null || inst.boot_step_at > now) continue;
      if (inst.intended_status !== 'running') {
        await store.update(id, { boot_step_at: null, boot_running_at: null }, tx);
      } else if (inst.actual_status === null) {
        await transition(tx, inst, { actual_status: 'loading', boot_step_at: inst.boot_running_at }, now);
      } else if (inst.actual_status === 'loading') {
        await becomeRunning(tx, { ...inst, boot_step_at: null, boot_running_at: null }, now);
      } else {
        await store.update(id, { boot_step_at: null, boot_running_at: null }, tx);
      }
    }
    if (due.length === BOOT_BATCH) {
      await ensureBootJob(tx, now, now);
      return;
    }
    const next = await tx.selectFrom('instances').select((eb) => eb.fn.min('boot_step_at').as('t')).where('destroyed_at', 'is', null).executeTakeFirst();
    if (next?.t !== null && next?.t !== undefined) await ensureBootJob(tx, Number(next.t), now);
  }

  async function startGpuMeter(tx: Tx, inst: InstanceRow, at: number): Promise<void> {
    const offer = JSON.parse(inst.offer_snapshot) as Record<string, unknown>;
    await billing.startMeter(tx, {
      contract: contractOf(inst.id),
      type: 'instance',
      kind: 'gpu',
      userId: inst.user_id,
      teamId: inst.team_id,
      rateMicroPerHour: inst.gpu_rate_micro,
      at,
      description: `${String(offer.gpu_name ?? 'GPU')} x${inst.num_gpus} instance ${inst.id}${inst.is_bid ? ' (bid)' : ''}`,
      metadata: { label: inst.label, template_id: inst.template_id },
    });
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
   * Host ports of a running instance: taken in order from the port slices of the GPUs it holds (each GPU owns an
   * equal slice of the machine's direct range), so instances on one machine never clash. Creation refuses more
   * ports than the slices hold.
   */
  function portsFor(inst: InstanceRow, machine: MachineInfo): Record<string, { HostIp: string; HostPort: string }[]> {
    const wanted = [...new Set([...RUNTYPE_PORTS[inst.runtype as Runtype], ...(JSON.parse(inst.port_maps) as string[])])];
    const gpus = (JSON.parse(inst.gpu_indexes) as number[]).slice().sort((a, b) => a - b);
    const slice = directPortSlice(machine);
    const hostPorts = gpus.flatMap((g) => Array.from({ length: slice }, (_, i) => machine.direct_port_start + g * slice + i));
    const ports: Record<string, { HostIp: string; HostPort: string }[]> = {};
    wanted.forEach((p, i) => {
      if (i < hostPorts.length) ports[p] = [{ HostIp: '0.0.0.0', HostPort: String(hostPorts[i]) }];
    });
    return ports;
  }

  /** Boot finished: ports appear, compute billing starts. On a faulted machine it stays loading (until recover). */
  async function becomeRunning(tx: Tx, inst: InstanceRow, at: number): Promise<void> {
    const machine = inst.machine_id === null ? undefined : await fleet.machine(inst.machine_id, tx);
    if (!machine || machine.fault !== null) {
      await store.update(inst.id, { boot_step_at: null, boot_running_at: null }, tx);
      return;
    }
    const ports = portsFor(inst, machine);
    const next = await transition(tx, inst, { actual_status: 'running', status_msg: null, ports: JSON.stringify(ports), running_since: at }, at);
    await startGpuMeter(tx, next, at);
  }

  /**
   * Leaves the running path: cancels boot work, frees the GPUs (unless `keepGpus`), stops compute billing.
   * Disk billing continues (spec: stop stops compute billing; disk charges continue).
   */
  async function halt(
    tx: Tx,
    inst: InstanceRow,
    at: number,
    to: { actual_status: string; intended_status?: string; status_msg: string | null },
    keepGpus = false,
  ): Promise<InstanceRow> {
    await scheduler.cancel(refOf(inst.id), { tx });
    if (!keepGpus) await fleet.release(tx, inst.id);
    await billing.stopMeter(tx, { contract: contractOf(inst.id), kind: 'gpu', at });
    return transition(
      tx,
      inst,
      { ...to, ports: null, running_since: null, boot_step_at: null, boot_running_at: null, ...(keepGpus ? {} : { gpu_indexes: '[]' }) },
      at,
    );
  }

  /**
   * Bid instances displaced by an allocation: stopped, still meant to run, and told why. Their rows are locked after
   * the fleet's: safe because the caller took the machine's row first (FleetApi.lockMachine; a rental's allocation
   * does), as does every transaction that changes holds on the machine.
   */
  async function outbid(tx: Tx, ids: number[], at: number): Promise<void> {
    for (const id of ids) {
      const inst = await store.lock(id, tx);
      if (!inst) continue;
      await halt(tx, inst, at, { actual_status: 'stopped', intended_status: 'running', status_msg: OUTBID_MSG });
    }
  }

  /**
   * GPUs on the machine were freed: outbid instances there, highest bid first, take them back if they can.
   * A resumed instance boots again. Lock order: the caller holds the machine's row, taken before any instance
   * (FleetApi.lockMachine): these instances are locked after the fleet's rows, and no transaction that would change
   * them or the machine's holds can be holding one of them while it waits for the machine.
   */
  async function resumeWaiting(tx: Tx, machineId: number | null, at: number, assertCredit: (userId: number) => Promise<void>): Promise<void> {
    if (machineId === null) return;
    const waiting = (await store.listOnMachine(machineId, tx))
      .filter((i) => i.actual_status === 'stopped' && i.intended_status === 'running')
      .sort((a, b) => (b.bid_per_gpu_micro ?? 0) - (a.bid_per_gpu_micro ?? 0) || a.id - b.id);
    for (const candidate of waiting) {
      const inst = await store.lock(candidate.id, tx);
      if (!inst || inst.actual_status !== 'stopped' || inst.intended_status !== 'running') continue;
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

  return { transition, boot, reboot, bootStep, becomeRunning, halt, outbid, resumeWaiting, startDiskMeter, startGpuMeter, bootSeconds };
}

export type Lifecycle = ReturnType<typeof lifecycleFactory>;
