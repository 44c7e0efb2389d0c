import type { Generated } from 'kysely';
import type { BillingTables } from '../../billing/billing-tables.js';
import type { TeamsTables } from '../../teams/teams-tables.js';
import type { TemplatesTables } from '../../templates/templates-tables.js';
import type { SshKeysTables } from '../../ssh-keys/ssh-keys-tables.js';
import type { InstancesTables } from '../../instances/instances-tables.js';
import type { FleetTables } from '../../fleet/fleet-tables.js';
import type { HostingTables } from '../../hosting/hosting-tables.js';
import type { TfaTables } from '../../tfa/tfa-tables.js';
import type { VolumesTables } from '../../volumes/volumes-tables.js';
import type { ServerlessTables } from '../../serverless/serverless-tables.js';

/**
 * Table types. The same schema on SQLite and PostgreSQL: booleans are integers 0/1, times are Unix seconds
 * (double precision), money is integer micro-dollars (bigint), JSON is text.
 */
export interface UsersTable {
  id: Generated<number>;
  email: string;
  full_name: string;
  password_hash: string | null;
  credit_micro: number;
  ssh_key: string | null;
  is_admin: number;
  email_verified_at: number | null;
  tfa_status: string;
  phone_number: string | null;
  created_at: number;
}

export interface ApiKeysTable {
  id: Generated<number>;
  user_id: number;
  /** Set for a key that acts for a team (team context). */
  team_id: number | null;
  name: string | null;
  /** SHA-256 of the secret, hex. The secret itself is never stored. */
  key_hash: string;
  /** `user`, `session` (login / 2FA), or `instance` (the restricted `instance_api_key`). */
  kind: string;
  /** JSON permission document `{"api": {...}}`; null means full access. */
  permissions: string | null;
  instance_id: number | null;
  /** Kept across `/_emu/reset`. */
  is_bootstrap: number;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

/** Due work for the scheduler: boot steps, expiries, billing ticks. A row is claimed and deleted in one transaction. */
export interface JobsTable {
  id: Generated<number>;
  kind: string;
  due_at: number;
  payload: string;
  /** What the job is about, e.g. `instance:12`, for cancelling. */
  ref: string | null;
}

/** Messages the emulator "sent" instead of sending (contract §2 outbox). */
export interface OutboxTable {
  id: Generated<number>;
  channel: string;
  to_addr: string;
  code: string | null;
  text: string;
  sent_at: number;
}

/** Small key/value state shared by every process (e.g. the virtual clock). */
export interface KvTable {
  key: string;
  value: string;
}

export interface FoundationTables {
  users: UsersTable;
  api_keys: ApiKeysTable;
  jobs: JobsTable;
  outbox: OutboxTable;
  kv: KvTable;
}

/**
 * Every table. Each feature declares its tables in its own `<feature>-tables.ts` and adds them here with one
 * `extends` entry; its migration is one line in migrations.ts.
 */
export interface Database extends FoundationTables, BillingTables, TeamsTables, TemplatesTables, SshKeysTables, InstancesTables, FleetTables, TfaTables, VolumesTables, ServerlessTables, HostingTables {}
