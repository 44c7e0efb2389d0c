/** Durations and limits of the 2FA subsystem (spec: 2FA time-bound conditions, Limits). One place, named. */

/** Add-method authorization window after the PUT authorize step (spec: 30 minutes). */
export const TFA_AUTH_WINDOW_S = 30 * 60;
/** A verification challenge (its code) expires after 10 minutes (spec). */
export const TFA_CHALLENGE_TTL_S = 10 * 60;
/** Prefix of challenge secrets (`tfa_secret`); the secret is shown once and only its SHA-256 is stored. */
export const TFA_SECRET_PREFIX = 'tfs_';
/** A login `tfa_secret` stands in for a Bearer token this long (it may carry several codes, each valid 10 min). */
export const TFA_LOGIN_SECRET_TTL_S = 30 * 60;
/** One method is locked this long after too many failures (spec: 15 minutes). */
export const TFA_LOCKOUT_S = 15 * 60;
/** Failed attempts that lock a method (our choice; the spec says "too many"). */
export const TFA_MAX_FAILED_ATTEMPTS = 5;
/** Wrong codes a single method-less challenge (e-mail code, code to a new number) takes before it is burnt. */
export const TFA_CHALLENGE_MAX_ATTEMPTS = 5;
/** Spec: labels of at most 30 characters. */
export const TFA_LABEL_MAX = 30;
/** Spec: a set of backup codes holds 10. */
export const BACKUP_CODES_PER_SET = 10;
/** Backup code alphabet: no 0/O, 1/I/L, so a code read aloud or typed is unambiguous (32 symbols, 60 bits a code). */
export const BACKUP_CODE_ALPHABET = 'ABCDEFGHJKMNPQRSTUVWXYZ23456789';
/** Digits of an SMS / e-mail / TOTP code. */
export const CODE_DIGITS = 6;
/** TOTP (RFC 6238): 30-second steps, one step of drift either way. */
export const TOTP_PERIOD_S = 30;
export const TOTP_DRIFT_STEPS = 1;
/** TOTP secrets: 20 random bytes (160 bits, RFC 4226's recommendation), base32. */
export const TOTP_SECRET_BYTES = 20;
export const TOTP_ISSUER = 'gpuplane';

/** An SMS code to the same number within this long makes `POST /tfa/sms/` answer `tfa_challenge_exists` (use resend). */
export const SMS_RECENT_CODE_S = 2 * 60;
/** Resending to the same challenge is allowed once per this many seconds. */
export const SMS_RESEND_MIN_INTERVAL_S = 30;
/** SMS sends per account per hour. */
export const SMS_MAX_PER_ACCOUNT_PER_HOUR = 10;
/** SMS sends per phone number per hour (all accounts together). */
export const SMS_MAX_PER_NUMBER_PER_HOUR = 5;
/** Pre-authorization sends (to a number not yet a method) per number per day, across all accounts. */
export const PREAUTH_PHONE_CAP_PER_DAY = 3;
/**
 * SMS pumping heuristic: an account that asks for codes to this many different numbers within a day is flagged for
 * SMS fraud (SMS off until support clears it).
 */
export const SMS_FRAUD_DISTINCT_NUMBERS_PER_DAY = 6;
export const HOUR_S = 3600;
export const DAY_S = 86400;

/**
 * Numbers refused before sending (`sms_blocked_number`): premium-rate and international-network ranges that SMS
 * pumping abuses, plus a reserved test range (`+1555010…`) that tests and demos can use on purpose.
 */
export const SMS_BLOCKED_PREFIXES = ['+1900', '+1976', '+881', '+882', '+883', '+979', '+1555010'] as const;

export const MSG = {
  lastRemoved: '2FA Successfully Disabled',
  smsAdded: 'SMS 2FA method added successfully',
  totpAdded: 'TOTP (authenticator app) 2FA method added successfully',
} as const;
