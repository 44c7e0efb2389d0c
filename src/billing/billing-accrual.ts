/**
 * The ledger's arithmetic, as pure functions. A meter segment charges `floor(rate × seconds / 3600)` micro-dollars
 * for its first `seconds` seconds; settling charges the difference between that cumulative amount and what the
 * segment already charged. Rounding therefore never accumulates: however often (or rarely) a segment is settled,
 * and however its time is split across days, the sum of its charges is the one floor of its whole length.
 */

export const SECONDS_PER_HOUR = 3600;
export const SECONDS_PER_DAY = 86_400;

/** Micro-dollars a segment at `rateMicroPerHour` has cost after `seconds` whole seconds. */
export function cumulativeMicro(rateMicroPerHour: number, seconds: number): number {
  if (seconds <= 0 || rateMicroPerHour <= 0) return 0;
  // BigInt: rate × seconds can pass 2^53 for long segments at high rates.
  return Number((BigInt(rateMicroPerHour) * BigInt(seconds)) / BigInt(SECONDS_PER_HOUR));
}

/** Start of the UTC day holding second `t`. */
export function dayOf(t: number): number {
  return Math.floor(t / SECONDS_PER_DAY) * SECONDS_PER_DAY;
}

/** Whole seconds of the service clock: a second is charged once its start has passed. */
export function wholeSecond(t: number): number {
  return Math.floor(t);
}

export interface Segment {
  rate_micro_per_hour: number;
  seg_start: number;
  settled_until: number;
  seg_charged_micro: number;
}

export interface DayCharge {
  day: number;
  amount: number;
  start: number;
  end: number;
}

/**
 * What settling the segment up to second `to` charges, split by UTC day. Empty when nothing is due.
 * The day amounts sum exactly to `cumulative(to) − seg_charged_micro`.
 */
export function accrue(seg: Segment, to: number): { total: number; cumulative: number; days: DayCharge[] } {
  const from = seg.settled_until;
  if (to <= from) return { total: 0, cumulative: seg.seg_charged_micro, days: [] };
  const days: DayCharge[] = [];
  let prevCum = seg.seg_charged_micro;
  for (let start = from; start < to; ) {
    const end = Math.min(to, dayOf(start) + SECONDS_PER_DAY);
    const cum = cumulativeMicro(seg.rate_micro_per_hour, end - seg.seg_start);
    days.push({ day: dayOf(start), amount: cum - prevCum, start, end });
    prevCum = cum;
    start = end;
  }
  return { total: prevCum - seg.seg_charged_micro, cumulative: prevCum, days };
}
