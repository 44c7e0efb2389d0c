/**
 * Waiting for an instance to reach a state, on the server's instance events (server-sent events), as the spec's poll
 * loop must: it fails on `exited`, `unknown` and `offline` (states an instance never leaves towards running) and on a
 * timeout, so a forgotten instance does not keep accruing disk charges.
 */
import { GpuplaneError, InstanceFailedError, WaitTimeoutError } from './errors.js';
import { backoffDelay } from './backoff.js';
import { readEvents, type ServerEvent } from './sse.js';
import type { Transport } from './transport.js';

/** States from which an instance never reaches running (spec: States and transitions). */
export const FAILED_STATES: readonly string[] = ['exited', 'unknown', 'offline'];
export const INSTANCE_EVENTS_PATH = '/api/v0/instances/events/';
/** The event stream's header naming the server's clock, `real` or `virtual`. */
export const CLOCK_HEADER = 'x-gpuplane-clock';
/** Spec: "Recommended poll interval: 10 seconds", used only when a server has no event stream. */
export const DEFAULT_POLL_INTERVAL_S = 10;
/** @default timeout of a wait, in seconds. */
export const DEFAULT_WAIT_TIMEOUT_S = 600;
/**
 * Pause before re-opening an event stream the server closed, jittered (backoff.ts): a server that shuts down closes
 * every client's stream at once, and they should not all come back in the same instant.
 */
const RECONNECT_DELAY_MS = 500;

export interface InstanceState {
  id: number;
  actual_status: string | null;
  [field: string]: unknown;
}

export interface WaitOptions {
  /** The state, or any of the states, to wait for. @default 'running' */
  until?: string | readonly string[];
  /** Gives up after this many seconds (the client's own clock). @default 600 */
  timeout?: number;
  signal?: AbortSignal;
  /** Called with each new state seen, the current one first. */
  onStatus?: (status: string | null, instance: InstanceState) => void;
  /** Poll period in seconds when the server has no event stream (404). @default 10 */
  pollInterval?: number;
}

/** `node:timers/promises`' `setTimeout(ms, undefined, { signal })`, which browsers lack (the SDK runs in one). */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Reads an instance event. The payload is the instance (or `{instance}`), with its `id` and `actual_status`;
 * an event named `…deleted`/`…destroyed` (or a payload with `deleted: true`) says the instance is gone.
 */
export function instanceFromEvent(ev: ServerEvent, id: number): InstanceState | 'gone' | undefined {
  let d: unknown;
  try {
    d = JSON.parse(ev.data);
  } catch {
    return undefined;
  }
  if (!d || typeof d !== 'object') return undefined;
  const outer = d as Record<string, unknown>;
  const inner = (outer.instance && typeof outer.instance === 'object' ? outer.instance : outer) as Record<string, unknown>;
  const eventId = Number(inner.id ?? outer.instance_id ?? outer.id);
  if (eventId !== id) return undefined;
  if (/deleted|destroyed/.test(ev.event) || outer.deleted === true || outer.type === 'deleted') return 'gone';
  const status = 'actual_status' in inner ? inner.actual_status : outer.actual_status;
  if (status !== null && typeof status !== 'string') return undefined;
  return { ...inner, id, actual_status: status };
}

export async function waitForInstance(
  transport: Transport,
  show: (id: number, signal: AbortSignal) => Promise<InstanceState | null>,
  id: number,
  options: WaitOptions = {},
): Promise<InstanceState> {
  const until = [options.until ?? 'running'].flat();
  const timeoutS = options.timeout ?? DEFAULT_WAIT_TIMEOUT_S;
  const ctl = new AbortController();
  const timedOut = new Error('timeout');
  const timer = setTimeout(() => ctl.abort(timedOut), timeoutS * 1000);
  const onUserAbort = () => ctl.abort(options.signal?.reason);
  options.signal?.addEventListener('abort', onUserAbort, { once: true });
  let last: string | null | undefined;
  let seen = false;
  let clock: 'real' | 'virtual' | undefined;

  /** The instance when it is where we want it; throws when it never will be. */
  const check = (inst: InstanceState | null | 'gone'): InstanceState | undefined => {
    if (inst === null || inst === 'gone') throw new GpuplaneError(404, 'not_found', `instance ${id} not found (destroyed?)`);
    if (!seen || inst.actual_status !== last) {
      seen = true;
      last = inst.actual_status;
      options.onStatus?.(last, inst);
    }
    if (last !== null && until.includes(last)) return inst;
    if (last !== null && FAILED_STATES.includes(last)) throw new InstanceFailedError(id, last, inst);
    return undefined;
  };

  try {
    if (options.signal?.aborted) throw options.signal.reason;
    for (;;) {
      let res: Response | undefined;
      try {
        res = await transport.stream(INSTANCE_EVENTS_PATH, ctl.signal);
        const kind = res.headers.get(CLOCK_HEADER);
        if (kind === 'real' || kind === 'virtual') clock = kind;
      } catch (err) {
        // A server without the event stream: fall back to the spec's poll loop.
        if (!(err instanceof GpuplaneError && err.status === 404)) throw err;
      }
      // Read the state only once subscribed, so a change in between is not missed.
      const done = check(await show(id, ctl.signal));
      if (done) return done;
      if (!res?.body) {
        await sleep((options.pollInterval ?? DEFAULT_POLL_INTERVAL_S) * 1000, ctl.signal);
        continue;
      }
      for await (const ev of readEvents(res.body)) {
        const inst = instanceFromEvent(ev, id);
        if (inst === undefined) continue;
        // An event may carry only some fields: the full record comes from the API once the wait is over.
        if (check(inst)) return (await show(id, ctl.signal)) ?? (inst as InstanceState);
      }
      await sleep(backoffDelay(0, { firstMs: RECONNECT_DELAY_MS, maxMs: RECONNECT_DELAY_MS }), ctl.signal);
    }
  } catch (err) {
    if (ctl.signal.aborted && ctl.signal.reason === timedOut) throw new WaitTimeoutError(id, last, timeoutS, clock);
    if (options.signal?.aborted) throw new GpuplaneError(0, 'aborted', `the wait for instance ${id} was aborted`);
    throw err;
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onUserAbort);
    ctl.abort();
  }
}
