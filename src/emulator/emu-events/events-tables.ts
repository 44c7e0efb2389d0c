/**
 * The emulator's host events (issue 34 item 3, src/emulator/emu-events/): scripted things that happen to the fleet's
 * hosts at a time of the service clock (an outbid wave, a host offline, a slow pull, a lost GPU). Kept in the
 * database, so every server process on one PostgreSQL sees the same events, and `/_emu/reset` (which empties every
 * table) clears them. Times are Unix seconds of the service clock.
 */
import type { Generated } from 'kysely';

export interface EmuHostEventsTable {
  id: Generated<number>;
  /** `outbid_wave`, `host_offline`, `slow_pull` or `gpu_lost`. */
  kind: string;
  /** When it happens (starts). */
  at: number;
  /** When its effect ends by itself (`at + duration`), or null: it lasts until cleared (or, a wave without one, is instant). */
  ends_at: number | null;
  /** JSON array of the machine ids it hits, chosen when it was made (by the seed unless given). */
  machine_ids: string;
  /** JSON object of the kind's parameters as asked (duration, pull_seconds, gpu_index, fault, fraction, machines). */
  params: string;
  /** The seed the machines were drawn with. */
  seed: number;
  /** `pending` (before `at`), `active` (its effect lasts), `done`. */
  state: string;
  /** JSON array of the instance ids it acted on (the bid instances a wave outbid), filled when it starts. */
  instance_ids: string;
  created_at: number;
  started_at: number | null;
  ended_at: number | null;
}

export interface EmuEventsTables {
  emu_host_events: EmuHostEventsTable;
}

// The database of the composition root knows this table (as src/database.ts's list does for the others).
declare module '../../platform/db/schema.js' {
  interface Database extends EmuEventsTables {}
}
