/**
 * The rate limit of offer searches made without a key (issue 29 item 1): Vast.ai serves offer search to anyone, and
 * dstack's catalogue (gpuhunt) sends no key, so gpuplane does too, counting each client address's searches in
 * one-minute windows. Searches with a key are never counted here: they are limited by what their account may do.
 */
import { isIPv6 } from 'node:net';
import type { Clock } from '../platform/clock.js';
import { ApiError } from '../platform/errors.js';

/** The length of one counting window, in seconds (the setting is a count per minute). */
export const ANONYMOUS_SEARCH_WINDOW_S = 60;
/**
 * Distinct addresses one window tracks at most. Past it a new address is refused until the window ends: memory stays
 * bounded (a few MB) whatever a flood of source addresses does, and callers already counted are served on.
 */
export const ANONYMOUS_SEARCH_TRACKED_MAX = 100_000;
/** IPv6 addresses count by their first four groups (the /64 one host is usually given), so a host cannot rotate. */
const IPV6_PREFIX_GROUPS = 4;

/** The counting key of a client address: itself (IPv4), or its /64 (IPv6). */
export function addressKey(address: string): string {
  // An IPv4 client on a dual-stack socket shows as `::ffff:a.b.c.d`: count it as the IPv4 address it is.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1];
  if (!isIPv6(address)) return address;
  const [head, tail = ''] = address.toLowerCase().split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === '' ? [] : tail.split(':');
  const groups = [...left, ...Array(8 - left.length - right.length).fill('0'), ...right];
  return `${groups.slice(0, IPV6_PREFIX_GROUPS).map((g) => g.replace(/^0+(?=.)/, '')).join(':')}::/64`;
}

/** Counts searches per address in fixed windows of the clock; `take` refuses the one past the limit with a 429. */
export function anonymousSearchLimit(clock: Clock, perMinute: number, trackedMax = ANONYMOUS_SEARCH_TRACKED_MAX) {
  let windowStart = -Infinity;
  let counts = new Map<string, number>();

  return {
    /** Counts one search by `address`; throws 429 `rate_limited` (with Retry-After) past the limit. */
    take(address: string): void {
      const now = clock.now();
      if (now >= windowStart + ANONYMOUS_SEARCH_WINDOW_S) {
        // A new window forgets every address: the map holds only this minute's callers.
        windowStart = Math.floor(now / ANONYMOUS_SEARCH_WINDOW_S) * ANONYMOUS_SEARCH_WINDOW_S;
        counts = new Map();
      }
      const key = addressKey(address);
      const used = counts.get(key);
      const full = used === undefined ? counts.size >= trackedMax : used >= perMinute;
      if (full) {
        const wait = Math.max(1, Math.ceil(windowStart + ANONYMOUS_SEARCH_WINDOW_S - now));
        throw new ApiError(
          'rate_limited',
          `too many offer searches without an API key from this address (${perMinute} a minute); try again in ${wait} s, or search with a key`,
          {},
          undefined,
          { 'Retry-After': String(wait) },
        );
      }
      counts.set(key, (used ?? 0) + 1);
    },
  };
}

export type AnonymousSearchLimit = ReturnType<typeof anonymousSearchLimit>;
