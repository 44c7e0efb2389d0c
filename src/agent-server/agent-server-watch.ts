/**
 * Held desired-state long-polls of one server process, watched together. The change feed (agent-server-changes.ts)
 * says which machines may have changed, in any process; one loop re-reads the fingerprints of just those held
 * machines in one batch (agent-server-store.ts `fingerprints`) and wakes only the polls whose machine's fingerprint
 * moved. Every held machine is re-read when the feed cannot say which changed, and every `safetyMs` all the same. So
 * an idle fleet of 10,000 held polls costs no database work between changes.
 */
import type { InstanceChanges } from '../instances/instances-agent-contract.js';
import type { DesiredChanges } from './agent-server-changes.js';

interface Waiter {
  seen: string;
  wake: () => void;
}

export interface DesiredWatchDeps {
  hub: InstanceChanges;
  changes: () => Promise<DesiredChanges>;
  /** Every held machine is re-read at least this often, whatever the feed says. */
  safetyMs: number;
  /** The current fingerprint of each machine asked for (machines without instances or requests included). */
  fingerprints: (machineIds: number[]) => Promise<Map<number, string>>;
  warn: (err: unknown) => void;
}

export function desiredWatch({ hub, changes, safetyMs, fingerprints, warn }: DesiredWatchDeps) {
  const held = new Map<number, Set<Waiter>>();
  const dirty = new Set<number>();
  let all = false;
  let kick: (() => void) | null = null;
  let looping = false;

  function onChange(ids: number[] | null): void {
    if (ids === null) all = true;
    else for (const id of ids) if (held.has(id)) dirty.add(id);
    if (all || dirty.size) kick?.();
  }

  /** Until the feed reports a change of a held machine, `safetyMs` passes, or shutdown. */
  function pause(): Promise<void> {
    if (all || dirty.size) return Promise.resolve();
    return new Promise((resolve) => {
      let finished = false;
      const done = () => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        kick = null;
        resolve();
      };
      const timer = setTimeout(() => {
        all = true;
        done();
      }, safetyMs);
      kick = done;
      const untilClosed = (): void => {
        if (!finished) void hub.next(safetyMs).then(() => (hub.closed ? done() : untilClosed()));
      };
      untilClosed();
    });
  }

  async function loop(): Promise<void> {
    looping = true;
    let off = () => undefined as void;
    try {
      const feed = await changes();
      off = feed.subscribe(onChange);
      // Changes from before the subscription are not reported: read every held machine once.
      all = true;
      while (held.size && !hub.closed) {
        await pause();
        if (hub.closed) break;
        const ids = all ? [...held.keys()] : [...dirty].filter((id) => held.has(id));
        all = false;
        dirty.clear();
        if (!ids.length) continue;
        let now: Map<number, string>;
        try {
          now = await fingerprints(ids);
        } catch (err) {
          // A failed read (a lost connection): those machines are read again on the next round.
          warn(err);
          for (const id of ids) dirty.add(id);
          await hub.next(100);
          continue;
        }
        for (const id of ids) {
          const waiters = held.get(id);
          if (!waiters) continue;
          const fp = now.get(id);
          for (const w of [...waiters]) if (fp !== undefined && fp !== w.seen) w.wake();
        }
      }
    } catch (err) {
      warn(err);
    } finally {
      off();
      looping = false;
      // Shutting down (or the feed failed): every held poll answers now; the agent asks again.
      if (hub.closed || held.size) for (const waiters of held.values()) for (const w of [...waiters]) w.wake();
    }
  }

  return {
    /**
     * Resolves once the machine's fingerprint differs from `seen`, after `ms`, when `signal` aborts (the agent hung
     * up), or at shutdown; whichever is first. `changedSince`: whether the feed's epoch for the machine moved since
     * `seen` was read (then it is read again at once).
     */
    changed(machineId: number, seen: string, changedSince: () => boolean, ms: number, signal?: AbortSignal): Promise<void> {
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
        // A change the feed reported before this poll was held would otherwise go unseen.
        if (changedSince()) onChange([machineId]);
        if (!looping) void loop();
      });
    },

    /** Machines with a held poll in this process (tests). */
    get holding(): number {
      return held.size;
    },
  };
}
