/**
 * The emulator's host events (issue 34 item 3): things that happen to the fleet's hosts at a time of the service
 * clock, scripted by a test: an outbid wave, a host offline for a while, a slow pull, a lost GPU. Each runs as a
 * scheduler job at its time (with the virtual clock, during `/_emu/clock/advance`, at the second it falls due), and
 * acts through what the emulator already has, so an event looks to a client exactly as the real thing:
 * - `outbid_wave`: the bid instances on its machines are outbid as by a higher bid (instances-lifecycle `outbid`:
 *   stopped, still meant to run, `status_msg` saying so); with a `duration` the higher bids leave then, and the
 *   outbid instances resume as when GPUs free up (`resumeWaiting`).
 * - `host_offline`: the machine fault `no_heartbeat` (default: the control plane notices at the heartbeat timeout,
 *   instances unknown, then offline), or `offline`/`unknown` at once, through the emulator's registered faults; then
 *   `recover` after `duration`.
 * - `slow_pull`: a slow-pull window of the transitions (emu-transitions/transitions-contract.ts): pulls that start on
 *   its machines meanwhile take `pull_seconds`.
 * - `gpu_lost`: the machine fault `gpu` of issue 33 (the machine is not offered, a rent of it is 410), and the renter
 *   of the lost GPU sees it in `status_msg` as from a real host's sample (`withLostGpus`); back after `duration`.
 * The machines are given, or drawn from the fleet by a seed (the event's, else one from GPUPLANE_SEED and the event's
 * id), so a run repeats exactly.
 */
import type { Clock } from '../../platform/clock.js';
import type { Store, Tx } from '../../platform/db/connect.js';
import { ApiError } from '../../platform/errors.js';
import type { FaultRequest } from '../../platform/faults.js';
import { SeededRandom } from '../../platform/random.js';
import type { Scheduler } from '../../platform/scheduler.js';
import type { MachinesApi } from '../../machines/machines-contract.js';
import type { InstanceRow, InstancesForHosts } from '../../instances/instances-hosts-contract.js';
import { endSlowPull, slowPull } from '../emu-transitions/transitions-contract.js';
import type { GpuTelemetryT } from '../../protocol/agent-protocol-schemas.js';
import type { EventInput, EventKind, HostEventT } from './events-schemas.js';
import { eventsStore, type HostEventRow } from './events-store.js';

/** The job kind, as stored in every database. */
export const JOB_HOST_EVENT = 'emu.host_event';
/** What a lost GPU says in its sample, as a real host's agent reports Xid 79 (src/agent/gpu-telemetry.ts). */
export const LOST_GPU_FAULT = 'Xid 79: GPU has fallen off the bus';
/** How long a pull takes during a `slow_pull` unless the event says. */
export const DEFAULT_PULL_SECONDS = 300;
const refOf = (id: number) => `emu-event:${id}`;

type Later = Array<() => Promise<void>>;

export interface EmuEventsDeps {
  store: Store;
  clock: Clock;
  scheduler: Scheduler;
  config: { seed: number };
  fleet: Pick<MachinesApi, 'machine' | 'lockMachine' | 'setMachineFault'> & {
    /** Every machine (deleted ones flagged), for the draw. */
    machineRecords(tx?: Tx): Promise<{ id: number; num_gpus: number; deleted: boolean }[]>;
  };
  instances: Pick<InstancesForHosts, 'write' | 'listOnMachine' | 'lock'>;
  /** Bid instances displaced (instances-lifecycle `outbid`), inside the caller's transaction, machine row held. */
  outbid(tx: Tx, instanceIds: number[], at: number): Promise<void>;
  /** GPUs on the machine were freed: its outbid instances take them back if they can (instances-lifecycle). */
  resumeWaiting(tx: Tx, machineId: number, at: number): Promise<void>;
  /** Wakes whoever waits on instances (a job's changes are not announced otherwise). */
  notify(): void;
  /** The emulator's registered faults (`POST /_emu/faults`), each in its own transaction. */
  fault(req: FaultRequest): Promise<unknown>;
}

/** A bid instance holding GPUs and meant to run: what a higher bid takes. */
const outbiddable = (i: InstanceRow) =>
  i.is_bid === 1 && i.intended_status === 'running' && i.actual_status !== 'stopped' && (JSON.parse(i.gpu_indexes) as number[]).length > 0;

/** `count` of `ids` drawn without replacement by the seed (partial Fisher-Yates), in id order. */
export function drawMachines(ids: readonly number[], count: number, seed: number): number[] {
  const pool = [...ids].sort((a, b) => a - b);
  const rng = new SeededRandom(seed);
  const n = Math.min(count, pool.length);
  for (let i = 0; i < n; i++) {
    const j = rng.int(i, pool.length);
    [pool[i], pool[j]] = [pool[j], pool[i]];
  }
  return pool.slice(0, n).sort((a, b) => a - b);
}

/** The seed of an event that names none: the service's seed mixed with the event's id (each event draws anew). */
const defaultSeed = (seed: number, id: number) => (Math.imul(seed ^ 0x5bd1e995, 2654435761) + Math.imul(id, 40503)) >>> 0;

function view(e: HostEventRow): HostEventT {
  const p = e.params as Record<string, any>;
  return {
    id: e.id,
    kind: e.kind as EventKind,
    at: e.at,
    ends_at: e.ends_at,
    machine_ids: e.machine_ids,
    duration: p.duration ?? null,
    pull_seconds: p.pull_seconds ?? null,
    gpu_index: p.gpu_index ?? null,
    fault: p.fault ?? null,
    fraction: p.fraction ?? null,
    machines: p.machines ?? null,
    seed: e.seed,
    state: e.state,
    instance_ids: e.instance_ids,
    created_at: e.created_at,
    started_at: e.started_at,
    ended_at: e.ended_at,
  };
}

/** Body checks that need no database; each names its field. */
function check(b: EventInput): void {
  const bad = (msg: string) => new ApiError('bad_request', msg);
  if (b.at !== undefined && b.after !== undefined) throw bad('body.after: give one of at or after, not both');
  if (b.machine_ids && (b.fraction !== undefined || b.machines !== undefined)) {
    throw bad(`body.${b.fraction !== undefined ? 'fraction' : 'machines'}: give machine_ids or a draw (fraction or machines), not both`);
  }
  if (b.fraction !== undefined && b.machines !== undefined) throw bad('body.machines: give one of fraction or machines, not both');
  if (b.pull_seconds !== undefined && b.kind !== 'slow_pull') throw bad(`body.pull_seconds: only for kind slow_pull, not ${b.kind}`);
  if (b.gpu_index !== undefined && b.kind !== 'gpu_lost') throw bad(`body.gpu_index: only for kind gpu_lost, not ${b.kind}`);
  if (b.fault !== undefined && b.kind !== 'host_offline') throw bad(`body.fault: only for kind host_offline, not ${b.kind}`);
  if (b.machine_ids && new Set(b.machine_ids).size !== b.machine_ids.length) throw bad('body.machine_ids: a machine is named twice');
}

export function emuEventsServiceFactory(deps: EmuEventsDeps) {
  const { store, clock, scheduler, config, fleet, instances } = deps;
  const events = eventsStore(store.db, store.dialect);

  /** Runs the faults of `later` after the commit; a machine gone meanwhile (an ApiError) is passed over. */
  const faultEach = (later: Later, machineIds: number[], fault: string) =>
    later.push(async () => {
      for (const machine_id of machineIds) {
        try {
          await deps.fault({ fault, machine_id });
        } catch (err) {
          if (!(err instanceof ApiError)) throw err;
        }
      }
    });

  /** The event happens: its effect starts, inside `tx` (the event's row locked); `later` after the commit. */
  async function begin(tx: Tx, e: HostEventRow, now: number, later: Later): Promise<void> {
    const instanceIds: number[] = [];
    switch (e.kind as EventKind) {
      case 'outbid_wave':
        for (const machineId of e.machine_ids) {
          // The machine's row first, as every transaction that moves its instances takes it (MachinesApi.lockMachine).
          await fleet.lockMachine(tx, machineId);
          const ids: number[] = [];
          for (const row of await instances.listOnMachine(machineId, tx)) {
            if (!outbiddable(row)) continue;
            const inst = await instances.lock(row.id, tx);
            if (inst && outbiddable(inst)) ids.push(inst.id);
          }
          await deps.outbid(tx, ids, now);
          instanceIds.push(...ids);
        }
        later.push(async () => deps.notify());
        break;
      case 'host_offline':
        faultEach(later, e.machine_ids, String(e.params.fault ?? 'no_heartbeat'));
        break;
      case 'slow_pull':
        await slowPull(tx, { ref: refOf(e.id), machineIds: e.machine_ids, pullSeconds: Number(e.params.pull_seconds ?? DEFAULT_PULL_SECONDS), until: e.ends_at });
        break;
      case 'gpu_lost':
        for (const machineId of e.machine_ids) {
          await fleet.lockMachine(tx, machineId);
          // A machine under another fault (its host silent) keeps it: the GPU fault shows once the host is back.
          if ((await fleet.machine(machineId, tx))?.fault === null) await fleet.setMachineFault(tx, machineId, 'gpu');
        }
        break;
    }
    // A wave without a duration is over once it struck; the rest last until `ends_at`, or until cleared.
    const instant = e.kind === 'outbid_wave' && e.ends_at === null;
    await events.update(tx, e.id, { state: instant ? 'done' : 'active', started_at: now, ended_at: instant ? now : null, instance_ids: instanceIds });
    if (e.ends_at !== null) await scheduler.schedule(JOB_HOST_EVENT, Math.max(e.ends_at, now), { id: e.id, phase: 'end' }, { tx, ref: refOf(e.id) });
  }

  /**
   * The event's effect ends (its time is up, or it is cleared): the hosts are back as they were, but for the machines
   * another active event of the kind still holds (two overlapping outages end when the later one does).
   */
  async function finish(tx: Tx, e: HostEventRow, now: number, later: Later): Promise<void> {
    const held = new Set((await events.activeOfKind(e.kind, tx)).filter((o) => o.id !== e.id).flatMap((o) => o.machine_ids));
    const freed = e.machine_ids.filter((m) => !held.has(m));
    switch (e.kind as EventKind) {
      case 'outbid_wave':
        // The higher bids leave: their GPUs are free again, and the outbid instances take them back.
        for (const machineId of freed) {
          await fleet.lockMachine(tx, machineId);
          await deps.resumeWaiting(tx, machineId, now);
        }
        later.push(async () => deps.notify());
        break;
      case 'host_offline':
        faultEach(later, freed, 'recover');
        break;
      case 'slow_pull':
        await endSlowPull(tx, refOf(e.id));
        break;
      case 'gpu_lost':
        for (const machineId of freed) {
          await fleet.lockMachine(tx, machineId);
          if ((await fleet.machine(machineId, tx))?.fault === 'gpu') await fleet.setMachineFault(tx, machineId, null);
        }
        break;
    }
    await events.update(tx, e.id, { state: 'done', ended_at: now });
  }

  scheduler.register(JOB_HOST_EVENT, async ({ id, phase }: { id: number; phase: 'start' | 'end' }, { tx, now, afterCommit }) => {
    const e = await events.lock(tx, id);
    if (!e) return;
    const later: Later = [];
    if (phase === 'start' && e.state === 'pending') await begin(tx, e, now, later);
    else if (phase === 'end' && e.state === 'active') await finish(tx, e, now, later);
    for (const work of later) afterCommit(work);
  });

  /** The machines the event hits: those named (each must exist), or drawn from the live fleet by the seed. */
  async function machinesOf(tx: Tx, b: EventInput, seed: number): Promise<number[]> {
    const all = await fleet.machineRecords(tx);
    const live = new Map(all.filter((m) => !m.deleted).map((m) => [m.id, m]));
    let ids: number[];
    if (b.machine_ids) {
      const missing = b.machine_ids.find((id) => !live.has(id));
      if (missing !== undefined) throw new ApiError('not_found', `machine ${missing} not found`);
      ids = [...b.machine_ids].sort((x, y) => x - y);
    } else {
      const count = b.machines ?? (b.fraction !== undefined ? Math.round(b.fraction * live.size) : 1);
      ids = drawMachines([...live.keys()], count, seed);
    }
    if (b.kind === 'gpu_lost') {
      const gpu = b.gpu_index ?? 0;
      const small = ids.find((id) => live.get(id)!.num_gpus <= gpu);
      if (small !== undefined) throw new ApiError('bad_request', `body.gpu_index: machine ${small} has ${live.get(small)!.num_gpus} GPU(s); there is no GPU ${gpu}`);
    }
    return ids;
  }

  /**
   * Ends (if active) and removes one event, inside `tx`, its row locked. Its jobs were cancelled before the lock: a job
   * of it running now (PostgreSQL) holds its job row and waits for the event's; the cancel waits for that job instead.
   * A job it left (one that ran meanwhile and scheduled the end) finds no event and does nothing.
   */
  async function clearOne(tx: Tx, e: HostEventRow, now: number, later: Later): Promise<HostEventT> {
    let ended = e;
    if (e.state === 'active') {
      await finish(tx, e, now, later);
      ended = { ...e, state: 'done', ended_at: now };
    } else if (e.state === 'pending') {
      ended = { ...e, state: 'done', ended_at: now };
    }
    await events.remove(tx, e.id);
    return view(ended);
  }

  async function runLater(later: Later): Promise<void> {
    for (const work of later) await work();
  }

  return {
    /** `POST /_emu/events`: the event, at its time (now: before the reply). */
    async create(b: EventInput): Promise<{ success: true; event: HostEventT }> {
      check(b);
      const later: Later = [];
      const id = await instances.write(async (tx) => {
        later.length = 0; // a rerun (a broken deadlock) starts over
        const now = clock.now();
        const at = b.at ?? now + (b.after ?? 0);
        if (at < now) throw new ApiError('bad_request', `body.at: ${at} is in the past (the service clock is at ${now})`);
        const params: Record<string, unknown> = {};
        for (const k of ['duration', 'pull_seconds', 'gpu_index', 'fault', 'fraction', 'machines'] as const) if (b[k] !== undefined) params[k] = b[k];
        if (b.kind === 'slow_pull') params.pull_seconds ??= DEFAULT_PULL_SECONDS;
        if (b.kind === 'gpu_lost') params.gpu_index ??= 0;
        if (b.kind === 'host_offline') params.fault ??= 'no_heartbeat';
        const row = await events.insert(tx, {
          kind: b.kind, at, ends_at: b.duration !== undefined ? at + b.duration : null, machine_ids: [], params, seed: b.seed ?? 0,
          state: 'pending', instance_ids: [], created_at: now, started_at: null, ended_at: null,
        });
        const seed = b.seed ?? defaultSeed(config.seed, row.id);
        const machineIds = await machinesOf(tx, b, seed);
        await events.setMachines(tx, row.id, machineIds, seed);
        const e = { ...row, machine_ids: machineIds, seed };
        if (at <= now) await begin(tx, e, now, later);
        else await scheduler.schedule(JOB_HOST_EVENT, at, { id: row.id, phase: 'start' }, { tx, ref: refOf(row.id) });
        return row.id;
      });
      await runLater(later);
      const e = await events.get(id);
      if (!e) throw new ApiError('not_found', `event ${id} was cleared meanwhile`);
      return { success: true, event: view(e) };
    },

    /**
     * The instances' view of their machines' GPUs (issue 33's `gpuStates`, read for each list of instances) with the
     * GPUs that active `gpu_lost` events took: a simulated machine has no agent to sample them, so the event stands
     * in for the sample (one GPU lost, Xid 79), and only the renter of that GPU sees the fault, as on a real host.
     */
    async withLostGpus<S extends { telemetry: GpuTelemetryT | null; fault: string | null }>(
      states: Map<number, S>,
      machineIds: readonly number[],
    ): Promise<Map<number, S | { telemetry: GpuTelemetryT; fault: string }>> {
      const wanted = new Set(machineIds);
      const lost = new Map<number, Set<number>>();
      for (const e of await events.activeOfKind('gpu_lost')) {
        for (const m of e.machine_ids) if (wanted.has(m) && !states.has(m)) lost.set(m, (lost.get(m) ?? new Set()).add(Number(e.params.gpu_index ?? 0)));
      }
      if (lost.size === 0) return states;
      const out = new Map<number, S | { telemetry: GpuTelemetryT; fault: string }>(states);
      for (const [m, gpus] of lost) {
        const samples = [...gpus].sort((a, b) => a - b).map((index) => ({
          index, util: null, mem_util: null, mem_used: null, mem_total: null, temp: null, power: null, ecc_uncorrected: null, xid: 79,
          fault: LOST_GPU_FAULT,
        }));
        // The machine's fault as the agent server words it (agent-server-health.ts `faultOf`).
        out.set(m, { telemetry: { nvml_error: null, gpus: samples }, fault: samples.map((g) => `GPU ${g.index}: ${g.fault}`).join('; ') });
      }
      return out;
    },

    /** `GET /_emu/events`: every event, oldest first. */
    async list(): Promise<{ events: HostEventT[] }> {
      return { events: (await events.list()).map(view) };
    },

    /** `DELETE /_emu/events/{id}`: a pending event cancelled, an active one ended now (its hosts back); then gone. */
    async clear(id: number): Promise<{ success: true; event: HostEventT }> {
      const later: Later = [];
      const event = await instances.write(async (tx) => {
        later.length = 0;
        await scheduler.cancel(refOf(id), { tx });
        const e = await events.lock(tx, id);
        if (!e) throw new ApiError('not_found', `event ${id} not found`);
        return clearOne(tx, e, clock.now(), later);
      });
      await runLater(later);
      return { success: true, event };
    },

    /** `DELETE /_emu/events`: every event cleared as `clear` does. */
    async clearAll(): Promise<{ success: true; events: HostEventT[] }> {
      const later: Later = [];
      const cleared = await instances.write(async (tx) => {
        later.length = 0;
        const out: HostEventT[] = [];
        const all = await events.list(tx);
        for (const { id } of all) await scheduler.cancel(refOf(id), { tx });
        for (const { id } of all) {
          const e = await events.lock(tx, id);
          if (e) out.push(await clearOne(tx, e, clock.now(), later));
        }
        return out;
      });
      await runLater(later);
      return { success: true, events: cleared };
    },
  };
}

export type EmuEventsService = ReturnType<typeof emuEventsServiceFactory>;
