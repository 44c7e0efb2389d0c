/**
 * The emulator's transitions (issue 34 item 4, src/emulator/emu-transitions/): the rules that time the simulated
 * hosts' work for an instance, and the slow-pull windows of the host events. Times Unix seconds (service time).
 */

/**
 * A rule: for every instance of a resource kind (`instance_id` null), or for one instance (overriding the kind's).
 * Kept in the database, so every server process on one PostgreSQL steps its machines by the same rules, and a saved
 * world (`/_emu/state`) carries them.
 */
export interface EmuTransitionsTable {
  /** `instance` (the kind's rule) or `instance:<id>` (one instance's): one rule per scope. */
  scope: string;
  /** The resource kind: `instance` (the simulated host's work for an instance). */
  kind: string;
  instance_id: number | null;
  /** `immediate`, `delay`, `manual` or `default` (an instance's rule only: the seeded timing, whatever the kind's). */
  mode: string;
  /** `delay`: seconds of service time from the desired change to running; null otherwise. */
  seconds: number | null;
  updated_at: number;
}

/**
 * A slow-pull window on a machine (transitions-contract.ts `slowPull`, the host event `slow_pull`): a pull that starts
 * there before `until` takes `pull_seconds`. Named by `ref` (the event), so overlapping windows end one by one.
 */
export interface EmuSlowPullsTable {
  ref: string;
  machine_id: number;
  pull_seconds: number;
  /** When the window closes; null: open until ended (`endSlowPull`). */
  until: number | null;
}

export interface TransitionsTables {
  emu_transitions: EmuTransitionsTable;
  emu_slow_pulls: EmuSlowPullsTable;
}

// The database of the composition root knows these tables (as src/database.ts's list does for the others).
declare module '../../platform/db/schema.js' {
  interface Database extends TransitionsTables {}
}
