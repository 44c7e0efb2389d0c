import type { Generated } from 'kysely';

/**
 * Billing tables. Times here are whole Unix seconds stored as `bigint` (not `double precision` as elsewhere): the
 * ledger charges whole seconds and does integer arithmetic on them in SQL (`rate * seconds / 3600`), which must
 * truncate identically on SQLite and PostgreSQL.
 */

/** One charge contract: `instance-<id>`, `volume-<id>`, a serverless worker; what a charges entry shows. */
export interface BillingContractsTable {
  id: Generated<number>;
  /** `instance-<id>`, `volume-<id>` … (the spec's `source`). */
  source: string;
  /** `instance`, `volume` or `serverless`. */
  type: string;
  user_id: number;
  team_id: number | null;
  description: string;
  /** JSON object: `label`, `template_id`, `endpoint_id`, `workergroup_id` … */
  metadata: string;
  /** Serverless workers: `workergroup-<id>` and `endpoint-<id>` wrappers of the tree format. */
  workergroup_source: string | null;
  endpoint_source: string | null;
  /** Pagination key of the tree format: the contract's own id, or the first id of its endpoint's contracts. */
  tree_key: number;
  /** First second charged, and last second settled. */
  start_at: number;
  end_at: number;
  /** Number of running meters; a live contract matches every range that reaches its start. */
  live: number;
}

/** A rate charged per second from `seg_start`. A rate change or a restart begins a new segment. */
export interface BillingMetersTable {
  id: Generated<number>;
  contract_id: number;
  kind: string;
  user_id: number;
  rate_micro_per_hour: number;
  seg_start: number;
  /** Every second before this one is charged. */
  settled_until: number;
  /** What the current segment has charged: floor(rate × (settled_until − seg_start) / 3600). */
  seg_charged_micro: number;
  running: number;
  /**
   * 1 while the contract's deposit pays this meter (billing-deposits.ts): its charges draw from the deposit, not from
   * the user's credit, and it is left out of the user's running totals and pending accrual. Its rate is then the
   * discounted one and `list_rate_micro_per_hour` the rate it returns to when the deposit is spent.
   */
  funded: Generated<number>;
  list_rate_micro_per_hour: number | null;
}

/** What a contract's item cost on one UTC day. Settling adds to the day's row, so rows never multiply per tick. */
export interface BillingChargesTable {
  contract_id: number;
  kind: string;
  /** Start of the UTC day (Unix seconds). */
  day: number;
  amount_micro: number;
  start_at: number;
  end_at: number;
}

/**
 * One user's totals over their running meters, kept with every change to those meters, so that the credit checks on
 * the hot paths (each rent) cost one row read however many instances the user runs:
 *   accrual at second t = (accrued + rate_micro_per_hour × (t − ref_at)) / 3600 − charged_micro, up to rounding.
 * Each meter's own accrual is floored (billing-accrual.ts), so this is an upper bound of the exact one, above it by
 * less than one micro-dollar per running meter; the exact figure still comes from the meters (ledgerOf).
 */
export interface BillingRatesTable {
  user_id: number;
  /** Σ rate of the running meters. */
  rate_micro_per_hour: number;
  /** Σ rate × (ref_at − seg_start) over the running meters' segments: 3600 × their accrual at `ref_at`. */
  accrued: number;
  /** The second `accrued` is taken at (the last change). */
  ref_at: number;
  /** Σ seg_charged_micro of the running meters. */
  charged_micro: number;
}

/**
 * Credit moving other than by charges: credit added (`credit`: an admin, the emulator), and transfers between users
 * (`transfer_in` / `transfer_out`, one row each side). `amount_micro` is signed: what the account gained.
 */
export interface BillingPaymentsTable {
  id: Generated<number>;
  user_id: number;
  amount_micro: number;
  kind: 'credit' | 'transfer_in' | 'transfer_out' | 'prepay' | 'deposit_refund';
  /** The other user of a transfer. */
  counterparty_id: number | null;
  description: string;
  created_at: number;
}

/**
 * An instance's prepaid deposit (`prepay instance`, billing-deposits.ts): credit moved out of the user's balance that
 * the contract's charges draw from first, at a discount. One per contract; a further prepay tops it up.
 */
export interface BillingDepositsTable {
  id: Generated<number>;
  contract_id: number;
  /** Who paid it in (the contract's payer), and who gets the rest back. */
  user_id: number;
  /** What the funded meters have not charged yet, as of their last settlement (their pending accrual comes off). */
  remaining_micro: number;
  /** Everything prepaid into it, and everything refunded from it. */
  prepaid_micro: number;
  refunded_micro: number;
  /** The discount on the contract's list rates while it lasts, in parts per million. */
  discount_ppm: number;
  created_at: number;
  updated_at: number;
  /** When the contract closed and the rest was refunded; null while open. */
  closed_at: number | null;
}

export interface BillingTables {
  billing_deposits: BillingDepositsTable;
  billing_payments: BillingPaymentsTable;
  billing_contracts: BillingContractsTable;
  billing_meters: BillingMetersTable;
  billing_rates: BillingRatesTable;
  billing_charges: BillingChargesTable;
}
