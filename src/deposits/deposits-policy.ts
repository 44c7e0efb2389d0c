/**
 * gpuplane's prepay policy (README "Prepaid instances"). The vastai client's help names "a discount of 0.2 for 1 month,
 * 0.3 for 3 months"; gpuplane takes those two tiers and adds a third:
 *
 *   months = deposit ÷ (the instance's list rate, GPUs and disk, $/hour × 730 hours)
 *   discount = 40 % from 6 months, 30 % from 3, 20 % from 1, none below one month,
 *              never more than the machine's `credit_discount_max` (its host sets it with `list machine -r`).
 *
 * The discount applies to the instance's rates while the deposit lasts; `timescale` is how many months the deposit
 * covers at the discounted rates. A further prepay tops the deposit up and re-rates it on its new total.
 */
import { discountedRate, PPM } from '../billing/billing-contract.js';
import { HOURS_PER_MONTH } from '../platform/money.js';

export const PREPAY_TIERS: readonly { months: number; discountPpm: number }[] = [
  { months: 6, discountPpm: 400_000 },
  { months: 3, discountPpm: 300_000 },
  { months: 1, discountPpm: 200_000 },
];

/** The discount (parts per million) a deposit of `depositMicro` earns on an instance at `listRate` micro-dollars/hour. */
export function prepayDiscountPpm(depositMicro: number, listRateMicroPerHour: number, creditDiscountMax: number): number {
  const cap = Math.max(0, Math.min(PPM, Math.round(creditDiscountMax * PPM)));
  const perMonth = listRateMicroPerHour * HOURS_PER_MONTH;
  const tier = PREPAY_TIERS.find((t) => depositMicro >= t.months * perMonth);
  return Math.min(tier?.discountPpm ?? 0, cap);
}

/** Months `depositMicro` covers at the list rate with the discount taken off. */
export function monthsCovered(depositMicro: number, listRateMicroPerHour: number, discountPpm: number): number {
  const perHour = discountedRate(listRateMicroPerHour, discountPpm);
  return perHour > 0 ? depositMicro / (perHour * HOURS_PER_MONTH) : 0;
}
