/**
 * `GET /api/v0/agent/desired/`, the desired-state long-poll every agent holds. The database is the truth: a poll reads
 * its machine's fingerprint (one statement; on PostgreSQL shared by the renewals that arrive together) and reuses the
 * state it built last time while the fingerprint stands; the held polls of a process are watched together
 * (agent-server-watch.ts): on every local change and every POLL_MS, so a change made by any server process reaches
 * the agent within that.
 */
import { LRUCache } from 'lru-cache';
import type { Clock } from '../platform/clock.js';
import { coalescing } from '../platform/coalesce.js';
import type { InstanceChanges } from '../instances/instances-agent-contract.js';
import type { AgentStore } from './agent-server-store.js';
import type { DesiredChanges } from './agent-server-changes.js';
import type { DesiredRead, DesiredState } from './agent-server-desired-reads.js';
import { desiredWatch } from './agent-server-watch.js';
import { deadline } from './agent-server-deadline.js';
import { COALESCE } from './agent-server-heartbeats.js';

/** Without change notifications (SQLite), a held long-poll checks for another connection's commit this often. */
export const POLL_MS = 100;
/** Held long-polls re-read their machines' fingerprints at least this often, whatever the change feed says. */
export const SAFETY_MS = 10_000;
/** Desired states kept for reuse by a poll's renewal (one per machine whose agent polls this process), LRU. */
const DESIRED_CACHE_MAX = 50_000;

export interface PollsDeps {
  /** PostgreSQL: concurrent renewals share the fingerprint statement. SQLite runs each at once: nothing to share. */
  shared: boolean;
  clock: Clock;
  agents: AgentStore;
  hub: InstanceChanges;
  changes: () => Promise<DesiredChanges>;
  desiredOf: (machineId: number) => Promise<DesiredRead>;
  /** A failed background read (the held polls' watch). */
  warn: (err: unknown) => void;
}

export function desiredPolls({ shared, clock, agents, hub, changes, desiredOf, warn }: PollsDeps) {
  const fingerprintOf = shared
    ? coalescing(async (ids: number[]) => {
      const found = await agents.fingerprints([...new Set(ids)]);
      return ids.map((id) => found.get(id)!);
    }, COALESCE)
    : async (machineId: number): Promise<string> => (await agents.fingerprints([machineId])).get(machineId)!;
  const watch = desiredWatch({ hub, changes, safetyMs: SAFETY_MS, fingerprints: (ids) => agents.fingerprints(ids), warn });
  /**
   * The last desired state built for each machine, with the fingerprint it was built at: a renewed long-poll reads
   * the fingerprint (one statement) and reuses the state while it stands and no log request in it has expired.
   */
  const built = new LRUCache<number, { seen: string; state: DesiredState; validUntil: number }>({ max: DESIRED_CACHE_MAX });

  return {
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
            built.set(machineId, (entry = { seen, state, validUntil }));
          }
          const d = entry.state;
          if (q.after === undefined || d.version !== q.after || wait === 0 || limit.passed() || signal?.aborted || hub.closed) {
            return { success: true as const, ...d };
          }
          // Held: the whole state is rebuilt only when what it is built from changed (agent-server-watch.ts).
          await watch.changed(machineId, seen, () => changeFeed.epoch(machineId) !== epoch, limit.left(), signal);
        }
      } finally {
        limit.cancel();
      }
    },
  };
}
