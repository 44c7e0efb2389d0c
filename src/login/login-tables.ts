/**
 * The tables of the login feature (migration `0045_login_throttles`). Sessions and e-mail challenges predate it and
 * live in 2FA's tables (tfa-tables.ts).
 */

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
}
