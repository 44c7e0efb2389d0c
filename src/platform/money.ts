/** Money is kept as whole micro-dollars; the API shows dollars as JSON numbers (contract §5). */
export const MICRO_PER_DOLLAR = 1_000_000;

/**
 * Hours in the average month (365 × 24 / 12). Disk and volume prices (`price_disk`, `storage_cost`) are $/GB/month;
 * search (`dph_total`, `storage_total_cost`) and the ledger convert them to $/hour with this one constant, so what
 * search shows is what is charged (contract §6).
 */
export const HOURS_PER_MONTH = 730;

export function toMicro(dollars: number): number {
  return Math.round(dollars * MICRO_PER_DOLLAR);
}

export function toDollars(micro: number): number {
  return micro / MICRO_PER_DOLLAR;
}

/** $/hour of `gb` of disk at `perGbMonth` $/GB/month: what search shows (`storage_total_cost`, part of `dph_total`). */
export function diskHourly(perGbMonth: number, gb: number): number {
  return (perGbMonth * gb) / HOURS_PER_MONTH;
}

/** The same price in whole micro-dollars/hour from a micro-dollar price: what the ledger charges. */
export function diskRateMicro(perGbMonthMicro: number, gb: number): number {
  return Math.round((perGbMonthMicro * gb) / HOURS_PER_MONTH);
}
