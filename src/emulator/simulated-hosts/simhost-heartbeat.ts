/**
 * Simulated host heartbeats (issue 3). Every healthy simulated host heartbeats each HEARTBEAT_INTERVAL_S. A host made
 * silent (machine fault `unknown`, `no_heartbeat`: it stops heartbeating; `offline`: disconnected) keeps the time of
 * its last beat (machines-silent-store.ts), and once that is older than HEARTBEAT_TIMEOUT_S its instances are
 * reported lost (instances turn `unknown`, then `offline`).
 *
 * A healthy host's last beat is implicit: it is now, since it beats for as long as it has no silent fault. Only the
 * change to silent is recorded (`faultChanged`: its last beat was at that moment), so a run reads only silent machines
 * (issue 16; `npm run bench -- pg-heartbeat`).
 *
 * One scheduler job chain looks for silent machines whose last beat crossed the timeout since its previous run. The
 * chain runs only while some silent host has not crossed the timeout yet, i.e. while a missed beat can still change
 * anything; a host going silent starts it. A chain running every interval for ever would cost a commit per 30 s of
 * virtual time (20,000 jobs for a 7-day `/_emu/clock/advance`). The kv row is both the chain's guard (one chain, with
 * any number of processes: inserting it is `ON CONFLICT DO NOTHING`) and the start of the next detection window, so
 * each machine is reported once.
 */
import { kvState } from '../../platform/db/kv.js';
import type { Clock } from '../../platform/clock.js';
import type { Store, Tx } from '../../platform/db/connect.js';
import type { JobContext, Scheduler } from '../../platform/scheduler.js';
import { isSilent, type SilentMachines } from '../../machines/machines-contract.js';

/** A simulated host heartbeats this often (seconds of service time). */
export const HEARTBEAT_INTERVAL_S = 30;
/** A host whose last beat is this old has missed three beats: it is lost. */
export const HEARTBEAT_TIMEOUT_S = 90;
/** The job kind, as stored in every database (not renamed with the file). */
export const JOB_HEARTBEAT = 'fleet.heartbeat';
/** kv key: present while the chain runs; its value is the start of the next detection window (Unix seconds). */
const CHAIN_KEY = 'fleet_heartbeat_checked_until';

export interface HeartbeatDeps {
  store: Store;
  clock: Clock;
  scheduler: Scheduler;
  machines: SilentMachines;
  /** Called once per lost machine that holds instances, inside the job's transaction. */
  hostLost: (tx: Tx, machineId: number) => Promise<void>;
}

export function simHeartbeatFactory({ store, clock, scheduler, machines, hostLost }: HeartbeatDeps) {
  const kv = kvState(store.db);

  /** Starts the chain unless one runs; the first run is one interval away. */
  async function ensureChain(tx: Tx, now: number): Promise<void> {
    if (await kv.claim(tx, CHAIN_KEY, String(now - HEARTBEAT_TIMEOUT_S))) await scheduler.schedule(JOB_HEARTBEAT, now + HEARTBEAT_INTERVAL_S, {}, { tx, ref: JOB_HEARTBEAT });
  }

  /**
   * One run. It writes no machine row (a healthy host's beat is implicit), so it never waits for a machine another
   * transaction holds. Lock order: lost instances (`hostLost`), then the kv row last, so a fault that holds a machine
   * row and then inserts the kv row cannot deadlock with it.
   */
  async function run(_payload: unknown, { tx, now }: JobContext): Promise<void> {
    const saved = await kv.get(tx, CHAIN_KEY);
    const since = saved !== undefined ? Number(saved) : now - HEARTBEAT_TIMEOUT_S - HEARTBEAT_INTERVAL_S;
    const cutoff = now - HEARTBEAT_TIMEOUT_S;
    // Crossed the timeout since the previous run, and holding instances: only those machines matter.
    for (const id of await machines.lostBetween(tx, since, cutoff)) await hostLost(tx, id);
    if (await machines.anySilentSince(tx, cutoff)) {
      await kv.set(tx, CHAIN_KEY, String(cutoff));
      await scheduler.schedule(JOB_HEARTBEAT, now + HEARTBEAT_INTERVAL_S, {}, { tx, ref: JOB_HEARTBEAT });
    } else {
      await kv.remove(tx, CHAIN_KEY);
    }
  }

  scheduler.register(JOB_HEARTBEAT, run);

  return {
    /**
     * A machine's fault changed (the fleet's hook, inside the caller's transaction, after the machine row was locked).
     * Going silent, the host's last beat is now and the chain starts watching it; healthy again, it beats at once
     * (implicitly).
     */
    async faultChanged(tx: Tx, machineId: number, before: string | null, after: string | null): Promise<void> {
      if (isSilent(before) || !isSilent(after)) return;
      const now = clock.now();
      await machines.wentSilent(tx, machineId, now);
      await ensureChain(tx, now);
    },

    /** Last beat of a machine: now while it is healthy, else the moment it went silent (tests and diagnostics). */
    async lastBeat(machineId: number): Promise<number | null> {
      const r = await machines.beatOf(machineId);
      if (!r) return null;
      if (!isSilent(r.fault)) return clock.now();
      return r.heartbeat_at;
    },

    /** Whether the chain runs (tests). */
    async watching(): Promise<boolean> {
      return (await kv.get(store.db, CHAIN_KEY)) !== undefined;
    },
  };
}

export type SimHeartbeat = ReturnType<typeof simHeartbeatFactory>;
