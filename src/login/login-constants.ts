/**
 * Limits of password login, the e-mail codes and password resets (issue 29 items 7, 15, 22): one place, named, each
 * with the reason for its value.
 */

export const MINUTE_S = 60;
export const HOUR_S = 3600;
export const DAY_S = 86400;

/**
 * Password guessing is throttled, never locked (issue 29 item 15): a hard lock after ten wrong passwords let anyone
 * lock the real owner out from anywhere. Three scopes count wrong passwords, each with its own free allowance and then
 * a delay before the next attempt that doubles with each further failure up to a cap:
 * - `pair`: one account from one source address. Tight: it is what stops one guesser on one account.
 * - `source`: one address over all accounts (password spraying).
 * - `account`: one account from every address together (a guesser with many addresses). Only sources the account has
 *   not logged in from before are held back by it, so a flood from elsewhere cannot keep the owner out from home.
 */
export interface ThrottleScope {
  /** Wrong passwords counted before the first delay. */
  free: number;
  /** The first delay, doubled by each further wrong password. */
  baseDelayS: number;
  /** The longest delay. */
  maxDelayS: number;
}
export const LOGIN_THROTTLE = {
  pair: { free: 5, baseDelayS: 15, maxDelayS: 15 * MINUTE_S },
  source: { free: 20, baseDelayS: 15, maxDelayS: HOUR_S },
  account: { free: 20, baseDelayS: 15, maxDelayS: 15 * MINUTE_S },
} as const satisfies Record<string, ThrottleScope>;
export type ThrottleScopeName = keyof typeof LOGIN_THROTTLE;

/** A scope's count starts again after this long without a wrong password (longer than every delay). */
export const LOGIN_FAILURE_WINDOW_S = DAY_S;
/** How often (service time) a process deletes counters idle for a window (login-throttle-store.ts `prune`). */
export const LOGIN_PRUNE_EVERY_S = HOUR_S;
/** Wrong passwords on one account (all sources) that e-mail its owner; at most once per `LOGIN_FAILURE_WINDOW_S`. */
export const LOGIN_ALERT_FAILURES = 10;

/** A sign-up verification code is valid a day (people read mail late) and takes a few tries. */
export const EMAIL_VERIFY_TTL_S = DAY_S;
/** One new verification e-mail per minute at most. */
export const EMAIL_VERIFY_RESEND_S = MINUTE_S;
/**
 * Verification codes e-mailed to one account per day (sign-ups of its address and resends together). Each code takes
 * `TFA_CHALLENGE_MAX_ATTEMPTS` guesses, so this bounds the guesses a day; a code a minute allowed about 7,200
 * (issue 29 item 22). It also bounds the mail anyone can send to someone else's address.
 */
export const EMAIL_VERIFY_CODES_PER_DAY = 10;
/** Wrong verification codes one account takes in a day, whatever the number of codes (issue 29 item 22). */
export const EMAIL_VERIFY_GUESSES_PER_DAY = 20;

/** A password reset code: short-lived, since it replaces the password (issue 29 item 7). */
export const PASSWORD_RESET_TTL_S = 30 * MINUTE_S;
/** Reset codes e-mailed to one account per hour and per day. */
export const PASSWORD_RESET_PER_HOUR = 3;
export const PASSWORD_RESET_PER_DAY = 10;
/** Sign-up's rule for a password, and the same for a new one. */
export const PASSWORD_MIN_LENGTH = 8;
export const PASSWORD_MAX_LENGTH = 1024;
