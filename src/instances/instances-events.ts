/**
 * No polling needed: a server-sent event stream of the caller's instance state changes, and a `wait` that answers
 * when an instance reaches a state. Both read the `instance_events` table (written in the same transaction as each
 * change), so they see changes made by any process sharing the database; within a process, `notify()` after each
 * commit wakes them at once, and across processes they re-check every EVENTS_POLL_MS.
 */
import type { Scope } from '../platform/auth.js';
import type { Clock } from '../platform/clock.js';
import { DEFAULT_EVENT_STREAMS_PER_USER } from '../config.js';
import { ApiError } from '../platform/errors.js';
import { FAILED_STATES, stopPending } from './instances-lifecycle.js';
import type { InstanceEventRow, InstancesStore } from './instances-store.js';

/** How often streams and waiters re-read the events table when nothing woke them (changes from other processes). */
export const EVENTS_POLL_MS = 250;
/** A comment line on idle streams, so proxies keep the connection open. */
export const SSE_KEEPALIVE_MS = 15_000;
export const WAIT_DEFAULT_TIMEOUT_S = 60;
export const WAIT_MAX_TIMEOUT_S = 600;
/** Events read per query on a stream. */
const EVENTS_BATCH = 100;
/**
 * Response header of the event stream naming the service clock (`real` or `virtual`): a client waiting on the stream
 * can tell a user why nothing happens (a virtual clock moves only when advanced).
 */
export const CLOCK_HEADER = 'x-gpuplane-clock';
/** Why a wait on a virtual clock may never end, and what to do (the SDK's WaitTimeoutError says the same). */
export const VIRTUAL_CLOCK_HINT = 'the service clock is virtual: it moves only when advanced, with POST /_emu/clock/advance (an admin key)';

/** Wakes everything waiting in this process. */
export class EventsHub {
  private waiters = new Set<() => void>();
  private closing = false;

  /** Streams and waits parked until the next change (tests wait on it instead of sleeping). */
  get waiting(): number {
    return this.waiters.size;
  }

  /** True once the server is shutting down: streams end and waits answer at once. */
  get closed(): boolean {
    return this.closing;
  }

  /** Shutdown: every stream and wait of this process ends now, instead of holding the server open. */
  close(): void {
    this.closing = true;
    this.notify();
  }

  notify(): void {
    const all = [...this.waiters];
    this.waiters.clear();
    for (const w of all) w();
  }

  /** Resolves on the next notify, or after `ms` (at once when closed). */
  next(ms: number): Promise<void> {
    if (this.closing) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiters.add(done);
    });
  }
}

/**
 * A real-time deadline (how long the caller is willing to hold the connection), independent of the service clock.
 * `undefined` is no deadline. (A huge timer is no substitute: Node clamps any delay over 2^31-1 ms to 1 ms.)
 */
function deadline(seconds: number | undefined): { passed: () => boolean; cancel: () => void } {
  if (seconds === undefined) return { passed: () => false, cancel: () => undefined };
  let passed = false;
  const t = setTimeout(() => (passed = true), seconds * 1000);
  return { passed: () => passed, cancel: () => clearTimeout(t) };
}

export interface StreamSink {
  write(chunk: string): void;
  closed(): boolean;
}

export function toEventData(e: InstanceEventRow) {
  return { id: e.instance_id, actual_status: e.actual_status, intended_status: e.intended_status, status_msg: e.status_msg, at: e.at };
}

export function instanceEventsFactory({ store, hub, clock, streamsPerUser = DEFAULT_EVENT_STREAMS_PER_USER }: {
  store: InstancesStore;
  hub: EventsHub;
  clock: Pick<Clock, 'kind'>;
  /** Streams one user may hold open at once in this process (config `eventStreamsPerUser`). */
  streamsPerUser?: number;
}) {
  /** Open streams by user, in this process: each one held polls the database (issue 29 item 22: 1,000 by one user). */
  const open = new Map<number, number>();
  return {
    /** The kind of the service clock, for the stream's CLOCK_HEADER. */
    clockKind: clock.kind,

    /**
     * Counts a stream of `userId` as open, or throws 429 `rate_limited` when the user holds the most allowed already.
     * Called before the stream's reply starts, so a refusal is the usual error reply; the returned release, once.
     */
    admit(userId: number): () => void {
      const held = open.get(userId) ?? 0;
      if (held >= streamsPerUser) {
        throw new ApiError('rate_limited', `this account holds ${held} instance event streams open, the most this server allows; close one first`);
      }
      open.set(userId, held + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const left = (open.get(userId) ?? 1) - 1;
        if (left > 0) open.set(userId, left);
        else open.delete(userId);
      };
    },

    /**
     * Writes `event: instance` frames for the scope's changes after `since` (default: from now on) until the client
     * goes away, `maxEvents` were sent, `timeoutS` real seconds passed (no `timeoutS`: no limit), or the server shuts down.
     */
    async stream(scope: Scope, sink: StreamSink, opts: { since?: number; maxEvents?: number; timeoutS?: number }): Promise<void> {
      let last = opts.since ?? (await store.lastEventId());
      let sent = 0;
      const limit = deadline(opts.timeoutS);
      let idleMs = 0;
      sink.write(`retry: 2000\n: listening for instance state changes after event ${last}\n\n`);
      try {
        while (!sink.closed() && !limit.passed() && !hub.closed) {
          const rows = await store.eventsSince(scope, last, EVENTS_BATCH);
          for (const e of rows) {
            sink.write(`id: ${e.id}\nevent: instance\ndata: ${JSON.stringify(toEventData(e))}\n\n`);
            last = e.id;
            if (opts.maxEvents !== undefined && ++sent >= opts.maxEvents) return;
          }
          if (rows.length === EVENTS_BATCH) continue;
          await hub.next(EVENTS_POLL_MS);
          idleMs = rows.length ? 0 : idleMs + EVENTS_POLL_MS;
          if (idleMs >= SSE_KEEPALIVE_MS) {
            sink.write(': keepalive\n\n');
            idleMs = 0;
          }
        }
      } finally {
        limit.cancel();
      }
    },

    /**
     * Answers when the instance's `actual_status` is `until`: 200 with its status; 409 `instance_failed` when it lands
     * in exited/unknown/offline first (not for `stopped` while a stop is pending on its host); 408 `wait_timeout` after
     * `timeoutS` real seconds; 404 when it is not (or no longer) the caller's.
     */
    async wait(scope: Scope, id: number, until: string, timeoutS: number): Promise<{ success: true; id: number; actual_status: string }> {
      const limit = deadline(timeoutS);
      try {
        for (;;) {
          const inst = await store.findInScope(id, scope);
          if (!inst) throw new ApiError('not_found', `instance ${id} not found`);
          const status = inst.actual_status;
          if (status === until) return { success: true, id, actual_status: status };
          // A stop pending on a host not heard (unknown, offline) becomes stopped once the host is back: waiting for
          // `stopped` goes on (lifecycle `stop`).
          const failed = status !== null && (FAILED_STATES as readonly string[]).includes(status) && !(until === 'stopped' && stopPending(inst));
          if (failed && !(FAILED_STATES as readonly string[]).includes(until)) {
            throw new ApiError('instance_failed', `instance ${id} is ${status}${inst.status_msg ? ` (${inst.status_msg})` : ''}; it will not become ${until}`, {
              actual_status: status,
              status_msg: inst.status_msg,
            });
          }
          if (limit.passed()) {
            const hint = clock.kind === 'virtual' ? `; ${VIRTUAL_CLOCK_HINT}` : '';
            throw new ApiError('wait_timeout', `instance ${id} did not become ${until} within ${timeoutS} s; it is ${status ?? 'provisioning'}${hint}`, {
              actual_status: status,
            });
          }
          if (hub.closed) throw new ApiError('service_unavailable', `the server is shutting down; instance ${id} is ${status ?? 'provisioning'}: retry the wait`);
          await hub.next(EVENTS_POLL_MS);
        }
      } finally {
        limit.cancel();
      }
    },
  };
}
