/**
 * The contract between billing (the ledger) and the features that cost money (instances, volumes, serverless).
 * A meter charges a rate per second of the service clock from `at` until it is stopped. Callers start and stop meters
 * inside their own transaction, at the moment of the state change, so charges and states never disagree.
 */
import { sql } from 'kysely';
import type { Tx } from '../platform/db/connect.js';

/**
 * A user's summed hourly rate over their running meters (micro-dollars, 0 without any), for a query over users
 * aliased `u` to select: the key lookup reads it in its one query per request (keys-store.ts). Billing's table, so
 * billing's SQL.
 */
export const USER_RUNNING_RATE = {
  column: sql`COALESCE(r.rate_micro_per_hour, 0)`,
  join: sql`LEFT JOIN billing_rates r ON r.user_id = u.id`,
};

/** Parts per million: the unit of a prepaid deposit's discount. */
export const PPM = 1_000_000;

/** A list rate (micro-dollars/hour) with a deposit's discount taken off, rounded down (in the payer's favour). */
export function discountedRate(listMicroPerHour: number, discountPpm: number): number {
  return Number((BigInt(listMicroPerHour) * BigInt(PPM - discountPpm)) / BigInt(PPM));
}

/** Top-level charge types of the spec. */
export type ContractType = 'instance' | 'volume' | 'serverless';
/** Child item kinds. */
export type ItemKind = 'gpu' | 'disk' | 'bandwidth' | 'volume' | 'worker';

export interface MeterStart {
  /** `instance-<id>`, `volume-<id>`, `endpoint-<id>`, `workergroup-<id>`. */
  contract: string;
  type: ContractType;
  kind: ItemKind;
  userId: number;
  /** Team that owns the contract (team context), or null. */
  teamId: number | null;
  /** Micro-dollars per hour. */
  rateMicroPerHour: number;
  /** Unix seconds (service clock). */
  at: number;
  /** Line shown on the contract, e.g. `RTX 4090 x2 instance 12`. */
  description: string;
  /** `label`, `template_id`, `endpoint_id`, `workergroup_id` … */
  metadata?: Record<string, unknown>;
}

export interface BillingApi {
  /** Starts (or restarts) charging the item. Starting a running meter changes its rate from `at`. */
  startMeter(tx: Tx, m: MeterStart): Promise<void>;
  /**
   * `startMeter` for many items at once (each contract once), in a few statements for all: a simulated host's pass
   * starts the compute billing of every instance that reached running. The same rows, charges and jobs as starting
   * them one by one.
   */
  startMeters(tx: Tx, ms: readonly MeterStart[]): Promise<void>;
  /** Stops charging the item at `at`, settling what accrued until then. No-op when not running. */
  stopMeter(tx: Tx, m: { contract: string; kind: ItemKind; at: number }): Promise<void>;
  /** Stops every meter of the contract (destroy). */
  stopContract(tx: Tx, m: { contract: string; at: number }): Promise<void>;
  /**
   * Moves a live contract to another payer from `at` (a team's work still paid by a member who leaves it): what ran
   * until then is settled and charged to the old payer, with the rest of its deposit refunded to them; its running
   * meters go on, at their list rates, as the new payer's.
   */
  changePayer(tx: Tx, m: { contract: string; userId: number; at: number }): Promise<void>;
  /** A one-off usage charge (bandwidth) in micro-dollars. */
  addUsage(tx: Tx, m: Omit<MeterStart, 'rateMicroPerHour'> & { amountMicro: number }): Promise<void>;
  /**
   * Throws ApiError `insufficient_credit` (402) when the user cannot start something that costs money. With
   * `contract`, a contract whose prepaid deposit has something left may start whatever the credit.
   */
  assertCredit(userId: number, tx?: Tx, contract?: string): Promise<void>;
  /** The user's balance in micro-dollars at the current second, including accrual not yet settled. */
  balance(userId: number, tx?: Tx): Promise<number>;
  /**
   * The same balance from a user row and their running rate read with it (the key lookup reads both): with no meter
   * running the stored credit is exact, and nothing more is read. An unknown rate reads the ledger.
   */
  balanceOf(user: { id: number; credit_micro: number }, runningRate: number | undefined): Promise<number>;
  /**
   * Registers what runs when a user's balance reaches zero (a scheduler job, exactly at that second, inside its
   * transaction `tx`; use only it). The instances feature registers a hook that stops the user's running instances
   * with `stopMeter` on their `gpu` meters: their `disk` meters keep running, as on real clouds. A hook must be
   * idempotent: it may run again while the balance stays at or below zero.
   *
   * Lock order (PostgreSQL): every request locks its feature's rows (an instance; one that changes GPU holds takes
   * the machine's row before it: MachinesApi.lockMachine), then the fleet, then billing contracts, then the user's row.
   * A hook must do the same: lock ALL the rows it will change first (in id order),
   * then call `e.lockBilling()` (locks the user's running contracts in id order), then stop meters. The check itself
   * takes no lock before the hooks, so it never holds billing rows while waiting for an instance.
   */
  onCreditExhausted(hook: CreditExhaustedHook): void;
  /**
   * Marks an instance contract as a serverless worker of a workergroup: its charges become `serverless` and the tree
   * format of the charges API groups it under `endpoint-<id>` and `workergroup-<id>` wrappers. Call it after the
   * meter started, in the same transaction.
   */
  setServerlessGroup(tx: Tx, contract: string, group: ServerlessGroup): Promise<void>;
}

/** `covered`: sources of the user's contracts a prepaid deposit still pays; a hook leaves them running. */
export type CreditExhaustedHook = (
  tx: Tx,
  e: { userId: number; at: number; lockBilling?: () => Promise<void>; covered?: ReadonlySet<string> },
) => Promise<void>;

export interface ServerlessGroup {
  endpointId: number;
  workergroupId: number;
}
