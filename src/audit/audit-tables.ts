import type { Generated } from 'kysely';

/**
 * The audit log: one row per security-relevant action that succeeded (audit-actions.ts lists them), with who did it
 * (user, API key, team context), the route, the client address and the time. Never a secret: `args` holds the path
 * parameters and the names of the body fields, not their values.
 */
export interface AuditLogsTable {
  id: Generated<number>;
  user_id: number;
  team_id: number | null;
  api_key_id: number | null;
  action: string;
  api_route: string;
  ip_address: string;
  /** JSON: `{"params": {...}, "fields": [...]}`. */
  args: string;
  created_at: number;
}

/** Each client address a user's requests came from, first seen when (`show ipaddrs`). */
export interface UserIpAddrsTable {
  user_id: number;
  ip: string;
  first_seen: number;
}

export interface AuditTables {
  audit_logs: AuditLogsTable;
  user_ipaddrs: UserIpAddrsTable;
}
