/**
 * The gateway's per-source limits, in this process (README "Connecting to an instance"): how many connections one
 * source address holds open at once, and how many failed logins it may make in a window before it is refused for a
 * while. A source is an IPv4 address, or an IPv6 address by its /64 (platform/connection-limits.ts `sourceKey`): a
 * client has a whole /64 to choose from. The agent's own SSH server says when a login failed (its stream's trailers,
 * `auth: failed`); an image's own sshd is not seen into (the bytes are encrypted end to end), so its failures are its
 * own to limit. Time comes from the service clock.
 */
import type { Clock } from '../platform/clock.js';

export interface GatewayLimitSettings {
  /** Connections one source may hold open at once. */
  connectionsPerSource: number;
  /** Failed logins within `failedLoginWindow` seconds that block a source. */
  failedLogins: number;
  failedLoginWindow: number;
  /** Seconds a blocked source is refused. */
  blockSeconds: number;
}

/** Sources whose failures are remembered at most; past it, the stalest are forgotten (a flood cannot grow the map). */
const TRACKED_SOURCES_MAX = 100_000;

interface SourceState {
  open: number;
  /** Times of failed logins within the window, oldest first. */
  failures: number[];
  blockedUntil: number;
}

export class GatewayLimits {
  private readonly sources = new Map<string, SourceState>();

  constructor(
    private readonly settings: GatewayLimitSettings,
    private readonly clock: Clock,
  ) {}

  private state(source: string): SourceState {
    let s = this.sources.get(source);
    if (!s) {
      if (this.sources.size >= TRACKED_SOURCES_MAX) this.forgetIdle();
      s = { open: 0, failures: [], blockedUntil: 0 };
      this.sources.set(source, s);
    }
    return s;
  }

  /** Drops sources with nothing open and nothing to remember. */
  private forgetIdle(): void {
    const now = this.clock.now();
    for (const [k, s] of this.sources) {
      if (s.open === 0 && s.blockedUntil <= now && s.failures.every((t) => t <= now - this.settings.failedLoginWindow)) this.sources.delete(k);
    }
  }

  /** Counts a new connection of the source; false when it already holds its cap (the caller closes it, uncounted). */
  admit(source: string): boolean {
    const s = this.state(source);
    if (s.open >= this.settings.connectionsPerSource) return false;
    s.open++;
    return true;
  }

  /** A connection `admit` counted has closed. */
  release(source: string): void {
    const s = this.sources.get(source);
    if (s && s.open > 0) s.open--;
  }

  /** Seconds the source is still refused for (0: not blocked). */
  blockedFor(source: string): number {
    const s = this.sources.get(source);
    const left = s ? s.blockedUntil - this.clock.now() : 0;
    return left > 0 ? Math.ceil(left) : 0;
  }

  /** A failed login from the source; the limit's worth within the window blocks it. */
  failed(source: string): void {
    const now = this.clock.now();
    const s = this.state(source);
    s.failures = s.failures.filter((t) => t > now - this.settings.failedLoginWindow);
    s.failures.push(now);
    if (s.failures.length >= this.settings.failedLogins) {
      s.blockedUntil = now + this.settings.blockSeconds;
      s.failures = [];
    }
  }
}
