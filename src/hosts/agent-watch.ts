/**
 * Held desired-state long-polls of one server process, watched together: one loop re-reads the fingerprints of every
 * machine with a held poll in one batch (agent-store.ts `fingerprints`), on each local change (the events hub) and at
 * least every `pollMs` (changes made by other server processes), and wakes only the polls whose machine changed.
 * So the database work per wake-up is a few queries whatever the number of held polls (10,000 agents hold one each).
 */
import type { EventsHub } from '../instances/instances-events.js';

interface Waiter {
  seen: string;
  wake: () => void;
}

export interface DesiredWatchDeps {
  hub: EventsHub;
  pollMs: number;
  /** The current fingerprint of each machine asked for (machines without instances or requests included). */
  fingerprints: (machineIds: number[]) => Promise<Map<number, string>>;
  warn: (err: unknown) => void;
}

export function desiredWatch({ hub, pollMs, fingerprints, warn }: DesiredWatchDeps) {
  const held = new Map<number, Set<Waiter>>();
  let looping = false;

  async function loop(): Promise<void> {
    looping = true;
    try {
      while (held.size && !hub.closed) {
        await hub.next(pollMs);
        if (hub.closed) break;
        const ids = [...held.keys()];
        let now: Map<number, string>;
        try {
          now = await fingerprints(ids);
        } catch (err) {
          // A failed read (a lost connection) is retried on the next round; the polls stay held until their deadline.
          warn(err);
          continue;
        }
        for (const id of ids) {
          const waiters = held.get(id);
          if (!waiters) continue;
          const fp = now.get(id);
          for (const w of [...waiters]) if (fp !== undefined && fp !== w.seen) w.wake();
        }
      }
    } finally {
      looping = false;
      // Shutting down: every held poll answers now.
      if (hub.closed) for (const waiters of held.values()) for (const w of [...waiters]) w.wake();
    }
  }

  return {
    /**
     * Resolves once the machine's fingerprint differs from `seen`, after `ms`, when `signal` aborts (the agent hung
     * up), or at shutdown; whichever is first.
     */
    changed(machineId: number, seen: string, ms: number, signal?: AbortSignal): Promise<void> {
      if (hub.closed || signal?.aborted) return Promise.resolve();
      return new Promise((resolve) => {
        let waiters = held.get(machineId);
        if (!waiters) held.set(machineId, (waiters = new Set()));
        const w: Waiter = {
          seen,
          wake: () => {
            clearTimeout(timer);
            signal?.removeEventListener('abort', w.wake);
            const set = held.get(machineId);
            set?.delete(w);
            if (set && set.size === 0) held.delete(machineId);
            resolve();
          },
        };
        const timer = setTimeout(w.wake, ms);
        signal?.addEventListener('abort', w.wake, { once: true });
        waiters.add(w);
        if (!looping) void loop();
      });
    },

    /** Machines with a held poll in this process (tests). */
    get holding(): number {
      return held.size;
    },
  };
}
