import type { Generated } from 'kysely';

/**
 * Issue 34 item 3: the emulator's faults by API operation (`/_emu/request-faults`), one row a rule. Kept in the
 * database, counters included, so that several processes on one PostgreSQL database fault the same requests, and
 * `/_emu/reset` (which empties every table) clears them.
 */
export interface EmuRequestFaultsTable {
  id: Generated<number>;
  /** GET, POST, PUT, DELETE, or '*'. */
  method: string;
  /** A route path as the API reference shows it (`/api/v0/instances/{id}/`), `*` at the end a prefix; null: any. */
  route: string | null;
  /** A permission category (the route's x-permission-category); null: any. */
  category: string | null;
  probability: number;
  /** The status a faulted request gets; null: latency only (the request then goes on). */
  status: number | null;
  /** 429 only: the Retry-After header, seconds. */
  retry_after: number | null;
  latency_ms: number;
  /** 1: no answer, the connection is dropped after latency_ms. */
  timeout: number;
  /** At most this many firings; null: no limit. */
  max_count: number | null;
  /** The rule's own seed; null: the server's GPUPLANE_SEED with the rule id. */
  seed: number | null;
  /** Requests the rule matched so far (the n of the n-th match, which the seeded draw is a function of). */
  matched: Generated<number>;
  /** Times it fired. */
  fired: Generated<number>;
  created_at: number;
}

/** The request faults' table (migration 0053). */
export interface EmuRequestFaultsTables {
  emu_request_faults: EmuRequestFaultsTable;
}

// The tables are declared here rather than in src/database.ts's list, so this part stays in its own folder.
declare module '../../platform/db/schema.js' {
  interface Database extends EmuRequestFaultsTables {}
}
