/**
 * Which machines' desired states may have changed, in this process or any other, so held long-polls re-read only
 * those (agent-server-watch.ts) and a poll's renewal reuses the state it built last time when nothing changed
 * (agent-server-polls.ts).
 * - PostgreSQL: the tables' triggers notify `gpuplane_desired` with the machine id at commit (migration 0037);
 *   every process listens. A dropped connection may have missed some: then every machine counts as changed.
 * - SQLite: one process writes the file; `PRAGMA data_version` (Store.version) moves with any commit, so while it
 *   stands still nothing changed; when it moves, any machine may have.
 * Without either (a PostgreSQL whose LISTEN failed), every machine always counts as changed: correct, only slower.
 */
import { sql } from 'kysely';
import type { Store } from '../platform/db/connect.js';
import type { Listener } from '../platform/db/listen.js';
import type { InstanceChanges } from '../instances/instances-agent-contract.js';

/** The channel the triggers of migration 0037_agent_desired_notify notify: payload `<schema>:<machine id>`. */
const DESIRED_CHANNEL = 'gpuplane_desired';

export interface DesiredChanges {
  /** A token that is the same as long as nothing the machine's desired state is built from changed. */
  epoch(machineId: number): string;
  /** Moves with every change of any machine: equal before and after a read, nothing changed during it. */
  seq(): number;
  /**
   * Calls `fn` with the machines that changed (null: any may have). `pollMs`: how often a source without
   * notifications is checked.
   */
  subscribe(fn: (machineIds: number[] | null) => void): () => void;
  close(): Promise<void>;
}

export async function desiredChanges(
  store: Store,
  opts: { hub: InstanceChanges; pollMs: number; warn: (err: unknown) => void },
): Promise<DesiredChanges> {
  const subscribers = new Set<(ids: number[] | null) => void>();
  const emit = (ids: number[] | null) => {
    for (const fn of subscribers) fn(ids);
  };
  const subscribe = (fn: (ids: number[] | null) => void) => {
    subscribers.add(fn);
    return () => void subscribers.delete(fn);
  };

  if (store.dialect === 'sqlite' && store.version) {
    const version = store.version;
    let last = version();
    let looping = false;
    // Checked on every local change (the events hub) and every pollMs (another connection's commit), while anyone listens.
    const loop = async () => {
      looping = true;
      try {
        while (subscribers.size && !opts.hub.closed) {
          await opts.hub.next(opts.pollMs);
          const v = version();
          if (v !== last) {
            last = v;
            emit(null);
          }
        }
      } finally {
        looping = false;
      }
    };
    return {
      epoch: () => `v${version()}`,
      seq: () => version(),
      subscribe(fn) {
        const off = subscribe(fn);
        last = version();
        if (!looping) void loop();
        return off;
      },
      close: async () => undefined,
    };
  }

  let listener: Listener | null = null;
  let gaps = 0;
  let events = 0;
  const counts = new Map<number, number>();
  if (store.listen) {
    const schema = String((await sql<{ s: string }>`select current_schema() as s`.execute(store.db)).rows[0]?.s ?? '');
    const prefix = `${schema}:`;
    try {
      listener = await store.listen(DESIRED_CHANNEL, {
        onPayload(payload) {
          if (!payload.startsWith(prefix)) return; // another gpuplane database in the same PostgreSQL
          const id = Number(payload.slice(prefix.length));
          if (!Number.isSafeInteger(id)) return;
          counts.set(id, (counts.get(id) ?? 0) + 1);
          events++;
          emit([id]);
        },
        onGap() {
          gaps++;
          events++;
          emit(null);
        },
        warn: opts.warn,
      });
    } catch (err) {
      opts.warn(err);
    }
  }
  if (listener) {
    const l = listener;
    return {
      epoch: (id) => `${gaps}:${counts.get(id) ?? 0}`,
      seq: () => events,
      subscribe,
      close: () => l.close(),
    };
  }
  // No notifications: everything may always have changed.
  let n = 0;
  const timer = setInterval(() => subscribers.size && emit(null), opts.pollMs);
  timer.unref();
  return { epoch: () => `n${n++}`, seq: () => n++, subscribe, close: async () => clearInterval(timer) };
}
