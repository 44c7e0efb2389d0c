import type { Generated } from 'kysely';

/**
 * Tables of the 2FA subsystem and the message providers (their migrations are in src/migrations/).
 * Same conventions as the rest of the schema: booleans 0/1, times in Unix seconds.
 */

/** A persistent 2FA method (spec: 2FA method). E-mail is never stored as one. */
export interface TfaMethodsTable {
  id: Generated<number>;
  user_id: number;
  /** `sms` or `totp`. */
  method: string;
  label: string;
  /** Full E.164 number (needed to send); only ever shown masked. */
  phone_number: string | null;
  /** The TOTP secret sealed with the SecretBox (AES-GCM); never returned. */
  totp_secret: string | null;
  is_primary: number;
  fail_count: number;
  locked_until: number | null;
  /** Last TOTP time step accepted: a code is accepted only once. */
  last_totp_step: number | null;
  created_at: number;
  last_used: number | null;
}

/** Backup codes: SHA-256 of the normalized code only. */
export interface TfaBackupCodesTable {
  id: Generated<number>;
  user_id: number;
  code_hash: string;
  created_at: number;
  used_at: number | null;
  /** Soft delete (replaced by a regeneration, or 2FA disabled). */
  deleted_at: number | null;
}

/**
 * A verification challenge, found by the SHA-256 of its `secret` (`tfa_secret`). `login` challenges also stand in
 * for a Bearer token in the logged-out flow; `email_verify` ones verify a sign-up address.
 */
export interface TfaChallengesTable {
  id: Generated<number>;
  user_id: number;
  secret_hash: string;
  /** `login`, `verify`, `authorize`, `setup` (a code to a new number), `email_verify` or `password_reset`. */
  purpose: string;
  /** `email`, `sms` or `totp` once a channel is chosen; null for a login secret with no code yet. */
  channel: string | null;
  code_hash: string | null;
  phone_number: string | null;
  method_id: number | null;
  /**
   * For login challenges: `cli` or `ui`, which decides how the session is handed over. For `email_verify` ones:
   * `takeover` when the sign-up replaced an earlier unverified one of the address (login's email-verify.ts).
   */
  client: string | null;
  fail_count: Generated<number>;
  last_sent_at: number | null;
  code_expires_at: number | null;
  /** Until when the secret itself is valid. */
  expires_at: number;
  consumed_at: number | null;
  created_at: number;
}

/** Per-account security state that is not part of the user object. */
export interface TfaAccountsTable {
  user_id: number;
  /** End of the add-method authorization window, or null. */
  new_method_until: number | null;
  /** Set when the account is flagged for SMS fraud; cleared by support. */
  sms_fraud_at: number | null;
  /** Unused since the password throttle moved to login's own table (`0043_login_throttles`). */
  login_fail_count: number;
  login_locked_until: number | null;
}

/** Every SMS actually sent, for the per-account and per-number limits. */
export interface SmsSendsTable {
  id: Generated<number>;
  user_id: number;
  phone_number: string;
  /** 1 when sent to a number that is not (yet) a method of the account. */
  preauth: number;
  sent_at: number;
}

export interface TfaTables {
  tfa_methods: TfaMethodsTable;
  tfa_backup_codes: TfaBackupCodesTable;
  tfa_challenges: TfaChallengesTable;
  tfa_accounts: TfaAccountsTable;
  sms_sends: SmsSendsTable;
}
