/**
 * The one closed list of error codes and the one table from code to HTTP status.
 * Every expected failure is an ApiError; anything else becomes a 500 `internal_error` that says nothing of internals.
 */
export const ERROR_STATUS = {
  // contract §4 (general API)
  bad_request: 400,
  auth_error: 401,
  permission_denied: 403,
  not_found: 404,
  offer_unavailable: 410,
  insufficient_credit: 402,
  rate_limited: 429,
  internal_error: 500,
  // transport-level failures
  payload_too_large: 413,
  unsupported_media_type: 415,
  method_not_allowed: 405,
  conflict: 409,
  request_timeout: 408,
  headers_too_large: 431,
  // a change signed in by the UI session cookie without the CSRF header (platform/auth.ts CSRF_HEADER; issue 15)
  csrf_failed: 403,
  // emulator control
  clock_not_virtual: 400,
  // scheduled jobs: a create repeating an existing job (client-compat-more §d: the client then offers to update it)
  scheduled_job_exists: 422,
  // instances: `wait` ends in a failure state (exited/unknown/offline), or its timeout passes first
  instance_failed: 409,
  // instances: a destroy of an instance that is already gone (destroyed, never existed, or not the caller's): Vast.ai's
  // code, which dstack's client reads as "already gone" rather than a failed termination (issue 29 item 2)
  no_such_instance: 404,
  wait_timeout: 408,
  // spec 2FA table (statuses as the spec gives them)
  invalid_tfa_method: 400,
  missing_auth_value: 400,
  missing_params: 400,
  email_not_verified: 400,
  '2fa_expired': 400,
  challenge_not_found: 400,
  no_challenge_found: 400,
  tfa_challenge_exists: 400,
  authorization_required: 403,
  no_pending_authorization: 400,
  invalid_backup_code: 401,
  untracked_2fa_found: 400,
  duplicate_tfa_method: 400,
  twilio_error: 400,
  preauth_phone_cap: 429,
  sms_rate_limited: 429,
  twilio_rate_limited: 429,
  tfa_locked: 429,
  service_unavailable: 503,
  // issue 32 (ports): an instance port's app could not be reached through its host's tunnel (port closed, app gone)
  bad_gateway: 502,
  phone_number_mismatch: 400,
  '2fa_login_failed': 400,
  '2fa_verification_failed': 400,
  team_user_forbidden: 403,
  missing_email: 400,
  missing_phone_number: 400,
  tfa_method_not_configured: 400,
  challenge_creation_failed: 500,
  sms_blocked_number: 400,
  sms_fraud_detected: 403,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    msg: string,
    /** Extra fields merged into the error body (e.g. `fail_count`, `locked_until`). */
    readonly extra: Record<string, unknown> = {},
    /** Overrides the table's status where the spec gives one code two statuses (`missing_auth_value`). */
    status?: number,
    /** Extra response headers, e.g. `Retry-After`. */
    readonly headers: Record<string, string> = {},
  ) {
    super(msg);
    this.status = status ?? ERROR_STATUS[code];
  }

  body(): ErrorBody {
    return { success: false, error: this.code, msg: this.message, ...this.extra };
  }
}

export interface ErrorBody {
  success: false;
  error: string;
  msg: string;
  [extra: string]: unknown;
}

export const badRequest = (msg: string) => new ApiError('bad_request', msg);
export const notFound = (what: string) => new ApiError('not_found', `${what} not found`);
