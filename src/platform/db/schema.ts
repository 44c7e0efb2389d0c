import type { Generated } from 'kysely';

/**
 * Table types. The same schema on SQLite and PostgreSQL: booleans are integers 0/1, times are Unix seconds
 * (double precision), money is integer micro-dollars (bigint), JSON is text.
 *
 * The platform declares only its own tables (the scheduler's jobs, the kv state). Every table of the running
 * database is `Database`: an open interface that the composition root (src/database.ts) extends with each feature's
 * `<feature>-tables.ts`, so the platform names no feature and every store still sees the whole schema.
 */
/** Due work for the scheduler: simulated hosts' agents, expiries, billing ticks. A row is claimed and deleted in one transaction. */
export interface JobsTable {
  id: Generated<number>;
  kind: string;
  due_at: number;
  payload: string;
  /** What the job is about, e.g. `instance:12`, for cancelling. */
  ref: string | null;
}

/** Small key/value state shared by every process (e.g. the virtual clock). */
export interface KvTable {
  key: string;
  value: string;
}

export interface PlatformTables {
  jobs: JobsTable;
  kv: KvTable;
}

/** Every table: the platform's here, the features' added by src/database.ts (declaration merging). */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface Database extends PlatformTables {}
