/**
 * The ports feature's tables (migration 0049_port_tokens): the per-port tokens a renter hands to API clients or puts
 * in a URL, and the console's one-use grants. Both hold only digests: a token or grant is shown once, when made, and a
 * copy of the database opens no port.
 */

/** One token per instance port; rotating it replaces the row, so the old token stops working. */
export interface PortTokensTable {
  instance_id: number;
  port: number;
  /** SHA-256 (hex) of the token. */
  token_hash: string;
  /** Who made it (the audit of who may have shared it). */
  user_id: number;
  created_at: number;
}

/** A console grant: one use, within GRANT_TTL_S, on its instance port's host only (`/_gpuplane/grant?g=`). */
export interface PortGrantsTable {
  /** SHA-256 (hex) of the grant. */
  grant_hash: string;
  instance_id: number;
  port: number;
  /** The user the grant's cookie signs in (their access is re-checked on every request). */
  user_id: number;
  expires_at: number;
}

export interface PortsTables {
  port_tokens: PortTokensTable;
  port_grants: PortGrantsTable;
}
