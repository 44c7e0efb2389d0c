/**
 * Typed errors of the SDK. Every failure the client reports is a GpuplaneError carrying the API's `error` code and
 * `msg`, so callers branch on `err.error` (e.g. `offer_unavailable`) rather than parsing text.
 */

/** Codes the SDK itself produces (beside the API's own codes from the error body). */
export type ClientErrorCode =
  | 'network_error'
  | 'timeout'
  | 'aborted'
  | 'instance_failed'
  | 'invalid_reply'
  | `http_${number}`;

export class GpuplaneError extends Error {
  override readonly name: string = 'GpuplaneError';
  constructor(
    /** HTTP status of the reply; 0 when no reply arrived (network error, timeout, abort). */
    readonly status: number,
    /** The API's `error` code (`not_found`, `auth_error` …) or one of ClientErrorCode. */
    readonly error: string,
    /** The API's `msg`, or the SDK's own explanation. */
    readonly msg: string,
    /** The whole error body as the server sent it (extra fields such as `fail_count`), when there was one. */
    readonly body?: Record<string, unknown>,
  ) {
    super(msg);
  }
}

/** `waitForInstance` gave up: the instance reached a state it cannot leave (`exited`, `unknown`, `offline`). */
export class InstanceFailedError extends GpuplaneError {
  override readonly name = 'InstanceFailedError';
  constructor(
    readonly instanceId: number,
    readonly actualStatus: string,
    readonly instance: Record<string, unknown> | undefined,
  ) {
    super(0, 'instance_failed', `instance ${instanceId} is ${actualStatus}: it will never reach the wanted state; destroy it and retry with another offer`);
  }
}

/** What a wait on a virtual clock needs (the server's `wait_timeout` message says the same). */
export const VIRTUAL_CLOCK_HINT = 'the service clock is virtual: it moves only when advanced, with POST /_emu/clock/advance (an admin key)';

/**
 * `waitForInstance` ran out of time; `lastStatus` is the last state seen, `clock` the server's clock when it said
 * (a virtual clock explains a wait that never ends: nothing happens until someone advances it).
 */
export class WaitTimeoutError extends GpuplaneError {
  override readonly name = 'WaitTimeoutError';
  constructor(
    readonly instanceId: number,
    readonly lastStatus: string | null | undefined,
    readonly seconds: number,
    readonly clock?: 'real' | 'virtual',
  ) {
    const hint = clock === 'virtual' ? `; ${VIRTUAL_CLOCK_HINT}` : '';
    super(0, 'timeout', `instance ${instanceId} did not get there within ${seconds} s (last state: ${lastStatus ?? 'none yet'})${hint}`);
  }
}
