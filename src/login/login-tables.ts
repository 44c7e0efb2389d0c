/**
 * The tables of the login feature: its sessions and its password throttle (src/migrations/). Login's e-mailed codes are
 * rows of 2FA's challenges, made through tfa-contract.ts.
 */

/** Login sessions: an `api_keys` row of kind `session` (the keys feature's) plus when it expires. */
export interface SessionsTable {
  key_id: number;
  user_id: number;
  client: string;
  created_at: number;
  expires_at: number;
}

/**
 * One counter of wrong passwords (login-constants.ts `LOGIN_THROTTLE`): of an address (`source:`), an account name
 * (`account:`) or both (`pair:`). Rows for names with no account exist too, so a 429 does not tell which exist.
 */
export interface LoginThrottlesTable {
  scope_key: string;
  /** The lowercased login name of `account` and `pair` rows (to clear an account's familiar sources); else null. */
  account: string | null;
  fail_count: number;
  /** The last attempt counted (the count starts again `LOGIN_FAILURE_WINDOW_S` after it). */
  last_failed_at: number;
  /** No attempt in this scope before this time; null when none is held back. */
  blocked_until: number | null;
  /** `pair` rows: 1 once this address logged in to this account with the right password. */
  familiar: number;
  /** `account` rows: when the owner was last e-mailed about failures. */
  alerted_at: number | null;
}

export interface LoginTables {
  login_throttles: LoginThrottlesTable;
  sessions: SessionsTable;
}
