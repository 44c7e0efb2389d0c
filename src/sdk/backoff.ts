/**
 * The one retry pause of the clients (the SDK and the agent, which imports it): doubling from a first wait up to a
 * cap, each wait drawn at random from the upper half of its nominal value ("equal jitter"). After a server restart
 * every agent and client fails at the same moment; without the draw, 10,000 of them would come back in the same
 * instant at every step, and keep doing so. The upper half keeps at least half the nominal pause, so a retry is never
 * a busy loop.
 *
 * Written here rather than taken from a retry library (exponential-backoff, p-retry): those own the loop and wait on
 * a timer they cannot cut short, while the agent's loops run for the process's life, restart the doubling on
 * success and end a pause early on a wake-up or a stop (an AbortSignal). What they share is this rule, not a loop.
 * Pure: no timers, no Node modules (the SDK runs in a browser).
 */

export interface BackoffOptions {
  /** The first nominal wait, ms. */
  firstMs: number;
  /** The longest nominal wait, ms: the doubling stops here. */
  maxMs: number;
}

/** The wait before retry number `attempt` (0 for the first retry), ms, in [nominal / 2, nominal). */
export function backoffDelay(attempt: number, o: BackoffOptions, random: () => number = Math.random): number {
  const nominal = Math.min(o.maxMs, o.firstMs * 2 ** attempt);
  return nominal / 2 + (random() * nominal) / 2;
}

/** A loop's backoff: `next()` for each failure's wait, `reset()` once a try succeeds. */
export class Backoff {
  private attempt = 0;

  constructor(
    private readonly options: BackoffOptions,
    private readonly random: () => number = Math.random,
  ) {}

  next(): number {
    return backoffDelay(this.attempt++, this.options, this.random);
  }

  reset(): void {
    this.attempt = 0;
  }
}
