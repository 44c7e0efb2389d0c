/**
 * What the rest of the emulator may use of the transitions (issue 34 item 4): the slow-pull window, for the host event
 * `slow_pull` (src/emulator/emu-events/). Plain functions over the caller's transaction, so an event's job opens and
 * closes a window in its own transaction, at its virtual time.
 *
 * What a window does: a pull of an image that STARTS on one of its machines while the window is open (from the call
 * until `until`) takes `pullSeconds` of service time instead of the seeded boot time; pulls under way keep their time,
 * and an image already on the machine is not pulled again (as on a real host). Overlapping windows on a machine: the
 * slowest counts. Precedence, the most specific first: an instance's own transition rule (`PUT /_emu/transitions`
 * with `instance_id`), then a slow-pull window of its machine, then the kind's rule, then the seeded default.
 * `/_emu/reset` ends every window (it empties every table).
 */
import type { Tx } from '../../platform/db/connect.js';
import { transitionsStore } from './transitions-store.js';

export interface SlowPullWindow {
  /** Names the window (the event's id, say): `endSlowPull(ref)` ends it, and a second call with it replaces it. */
  ref: string;
  machineIds: readonly number[];
  /** How long a pull that starts on these machines during the window takes, seconds (0 or more). */
  pullSeconds: number;
  /** When the window closes, Unix seconds of the service clock; null: open until `endSlowPull`. */
  until: number | null;
}

/** Opens (or replaces) a slow-pull window on machines, now. */
export async function slowPull(tx: Tx, w: SlowPullWindow): Promise<void> {
  await transitionsStore.putSlowPull(tx, w.ref, [...new Set(w.machineIds)], Math.max(0, w.pullSeconds), w.until);
}

/** Closes a window now (a cancelled or ended event); nothing when there is none of that ref. */
export async function endSlowPull(tx: Tx, ref: string): Promise<void> {
  await transitionsStore.endSlowPulls(tx, ref);
}

/** Closes every window (the events cleared). */
export async function endAllSlowPulls(tx: Tx): Promise<void> {
  await transitionsStore.endSlowPulls(tx);
}

/**
 * The pull time a window sets on the machine now (the slowest of its open windows), or undefined when none is open:
 * for the machines whose pulls the simulated runtime does not make (the real-container mode's, emu-containers/).
 */
export async function slowPullSeconds(tx: Tx, machineId: number, now: number): Promise<number | undefined> {
  const mine = (await transitionsStore.openSlowPulls(tx, now)).filter((w) => w.machine_id === machineId).map((w) => Number(w.pull_seconds));
  return mine.length ? Math.max(...mine) : undefined;
}
