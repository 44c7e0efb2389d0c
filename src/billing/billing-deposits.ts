/**
 * Prepaid deposits (`prepay instance`, `show deposit`; docs/spec/client-compat-more.md §c). A prepay moves credit out of the user's
 * balance into the contract's deposit, and from then on the contract's meters are "funded": they charge at the
 * discounted rate and their charges draw from the deposit, not from the credit (they are left out of the user's
 * pending accrual and running totals, so the credit check never counts them). At the first whole second at which the
 * funded meters have charged the whole deposit, a job (DEPOSIT_JOB) turns them back into ordinary meters at their list
 * rates; the part of that last second's charge beyond the deposit is taken from the credit. Closing the contract
 * (destroying the instance) refunds what is left to the credit. Every micro-dollar is charged once, to the deposit or
 * to the credit, and every movement commits with the change that causes it.
 *
 * What discount a deposit earns is the caller's policy (src/deposits/): `prepay` asks it with the deposit's new total.
 */
import type { Tx } from '../platform/db/connect.js';
import { ApiError } from '../platform/errors.js';
import type { JobContext, Scheduler } from '../platform/scheduler.js';
import { SECONDS_PER_HOUR, wholeSecond } from './billing-accrual.js';
import { discountedRate, PPM } from './billing-contract.js';
import type { BillingDepositsStore, DepositRow } from './billing-deposits-store.js';
import type { BillingPaymentsStore } from './billing-payments-store.js';
import type { BillingStore, MeterRow, RatesDelta } from './billing-store.js';

export const DEPOSIT_JOB = 'billing.deposit';
const depositRef = (contractId: number) => `deposit:${contractId}`;

/** What a running meter's segment has charged at whole second `t` beyond what it had charged when last settled. */
function pendingAt(m: MeterRow, t: number): bigint {
  if (t <= m.seg_start) return 0n;
  return (BigInt(m.rate_micro_per_hour) * BigInt(t - m.seg_start)) / BigInt(SECONDS_PER_HOUR) - BigInt(m.seg_charged_micro);
}

/**
 * The first whole second, from `from` on, at which the running meters' charges since their last settlement reach
 * `remaining`, or null when they never do (no rate). Each meter's charge is a floor, so the sum is known only to
 * within one micro-dollar per meter: a binary search between the bounds that gives finds the exact second.
 */
export function exhaustionSecond(meters: MeterRow[], remaining: number, from: number): number | null {
  const rate = meters.reduce((a, m) => a + m.rate_micro_per_hour, 0);
  if (rate <= 0) return null;
  const start = Math.max(from, ...meters.map((m) => m.settled_until));
  const reached = (t: number) => meters.reduce((a, m) => a + pendingAt(m, t), 0n) >= BigInt(remaining);
  if (reached(start)) return start;
  // Σ pending(t) ≥ rate × (t − start) / 3600 − n: at `hi` the charges have reached `remaining`.
  let hi = start + Number((BigInt(remaining + meters.length) * BigInt(SECONDS_PER_HOUR) + BigInt(rate) - 1n) / BigInt(rate));
  let lo = start;
  while (hi - lo > 1) {
    const mid = lo + Math.floor((hi - lo) / 2);
    if (reached(mid)) hi = mid;
    else lo = mid;
  }
  return hi;
}

export interface DepositsDeps {
  db: Tx;
  store: BillingStore;
  deposits: BillingDepositsStore;
  payments: BillingPaymentsStore;
  scheduler: Scheduler;
  /** Charges the meter up to `to` (to the deposit when funded, else to the credit). */
  settleMeter(tx: Tx, meter: MeterRow, to: number): Promise<void>;
  /** Re-times the user's credit check after their credit or burn rate changed. */
  creditChanged(tx: Tx, userId: number): Promise<void>;
  /** The user's exact balance. */
  balance(userId: number, tx: Tx): Promise<number>;
}

export interface PrepayResult {
  /** The deposit after the prepay, micro-dollars, and the discount it earned. */
  depositMicro: number;
  discountPpm: number;
}

export interface DepositStatus {
  open: boolean;
  /** What is left at the given second (the funded meters' accrual since their settlement taken off). */
  remainingMicro: number;
  prepaidMicro: number;
  refundedMicro: number;
  discountPpm: number;
}

const counted = (m: MeterRow, at: number): RatesDelta => ({
  rate: m.rate_micro_per_hour,
  accrued: m.rate_micro_per_hour * (at - m.seg_start),
  charged: m.seg_charged_micro,
});
const negated = (d: RatesDelta): RatesDelta => ({ rate: -d.rate, accrued: -d.accrued, charged: -d.charged });

export function depositsFactory(d: DepositsDeps) {
  const { store: billing, deposits } = d;

  /**
   * Starts a new segment of `meter` at second `at` (it is settled up to there first), funded by the deposit at its
   * discount or, without one, at its list rate; the user's running totals follow.
   */
  async function resegment(tx: Tx, meter: MeterRow, at: number, listRate: number, funding: DepositRow | undefined, userId = meter.user_id): Promise<void> {
    const start = Math.max(at, meter.settled_until);
    if (meter.running) {
      await d.settleMeter(tx, meter, start);
      if (!meter.funded) await billing.moveRates(meter.user_id, start, negated(counted(meter, start)), tx);
    }
    const rate = funding ? discountedRate(listRate, funding.discount_ppm) : listRate;
    const next = {
      rate_micro_per_hour: rate, seg_start: start, settled_until: start, seg_charged_micro: 0, running: 1, user_id: userId,
      funded: funding ? 1 : 0, list_rate_micro_per_hour: funding ? listRate : null,
    };
    await billing.updateMeter(meter.id, next, tx);
    if (!funding) await billing.moveRates(userId, start, { rate, accrued: 0, charged: 0 }, tx);
    Object.assign(meter, next);
  }

  /** Schedules the deposit's exhaustion at its exact second (none while no funded meter runs). */
  async function reschedule(tx: Tx, contractId: number, at: number): Promise<void> {
    await d.scheduler.cancel(depositRef(contractId), { tx, kind: DEPOSIT_JOB, skipRunning: true });
    const deposit = await deposits.openOf(contractId, tx);
    if (!deposit) return;
    const funded = (await billing.meters(contractId, tx)).filter((m) => m.running && m.funded);
    const due = exhaustionSecond(funded, Math.max(0, deposit.remaining_micro), wholeSecond(at));
    if (due !== null) await d.scheduler.schedule(DEPOSIT_JOB, due, { contract_id: contractId }, { tx, ref: depositRef(contractId) });
  }

  /** Moves what the deposit overran (its last second's charge beyond it) to the credit. */
  async function settleOverrun(tx: Tx, deposit: DepositRow, at: number): Promise<void> {
    if (deposit.remaining_micro >= 0) return;
    await billing.adjustCredit(deposit.user_id, deposit.remaining_micro, tx);
    await deposits.update(deposit.id, { remaining_micro: 0, updated_at: at }, tx);
    deposit.remaining_micro = 0;
  }

  /** DEPOSIT_JOB: at the deposit's exhaustion second, its meters return to their list rates, paid from credit. */
  async function exhaust(payload: { contract_id: number }, ctx: JobContext): Promise<void> {
    const tx = ctx.tx;
    const at = wholeSecond(ctx.dueAt);
    await billing.lockContract(payload.contract_id, tx);
    const deposit = await deposits.openOf(payload.contract_id, tx);
    if (!deposit) return;
    const meters = await billing.meters(payload.contract_id, tx);
    const funded = meters.filter((m) => m.running && m.funded);
    for (const m of funded) await d.settleMeter(tx, m, Math.max(at, m.settled_until));
    const left = (await deposits.openOf(payload.contract_id, tx))!;
    if (left.remaining_micro > 0) {
      // Not spent yet (its meters changed since this job was timed): time it again.
      await reschedule(tx, payload.contract_id, at);
      return;
    }
    await settleOverrun(tx, left, at);
    for (const m of meters) {
      if (!m.funded) continue;
      const list = m.list_rate_micro_per_hour ?? m.rate_micro_per_hour;
      if (m.running) await resegment(tx, m, at, list, undefined);
      else await billing.updateMeter(m.id, { funded: 0, list_rate_micro_per_hour: null, rate_micro_per_hour: list }, tx);
    }
    await billing.touchContract(payload.contract_id, at, tx);
    await d.creditChanged(tx, deposit.user_id);
  }

  d.scheduler.register(DEPOSIT_JOB, exhaust);

  return {
    /**
     * The funding a meter of this contract starts a segment with at second `at`: the open deposit while it has
     * something left, else undefined (list rate, paid from credit).
     */
    async fundingFor(tx: Tx, contractId: number, meters: MeterRow[], at: number): Promise<DepositRow | undefined> {
      const deposit = await deposits.openOf(contractId, tx);
      if (!deposit) return undefined;
      const pending = meters.filter((m) => m.running && m.funded).reduce((a, m) => a + pendingAt(m, at), 0n);
      return BigInt(deposit.remaining_micro) - pending > 0n ? deposit : undefined;
    },

    resegment,
    reschedule,

    /**
     * Moves `amountMicro` of the user's credit into the contract's deposit, inside `tx`, and funds the contract's
     * running meters at the discount `discountFor` gives the deposit's new total. The caller holds the contract's
     * owning rows (the instance) locked; this locks the contract, then the user. 402 when the user's exact balance
     * does not cover the amount: no balance goes negative by a prepay, however many run at once.
     */
    async prepay(
      tx: Tx,
      p: { contract: string; userId: number; amountMicro: number; at: number; description: string; discountFor: (depositMicro: number) => number },
    ): Promise<PrepayResult> {
      const at = wholeSecond(p.at);
      const contract = await billing.contractBySource(p.contract, tx);
      if (!contract) throw new ApiError('not_found', `${p.contract} has no charges to prepay`);
      await d.payments.lockUsers([p.userId], tx);
      const left = await d.balance(p.userId, tx);
      if (left < p.amountMicro) {
        throw new ApiError('insufficient_credit', `not enough credit: your balance is $${(left / PPM).toFixed(2)}, less than the $${p.amountMicro / PPM} to prepay`);
      }
      // Every running meter settled to this second: what was due before the prepay is paid as it was.
      const meters = await billing.meters(contract.id, tx);
      for (const m of meters) if (m.running) await d.settleMeter(tx, m, Math.max(at, m.settled_until));
      let deposit = await deposits.openOf(contract.id, tx);
      if (deposit) await settleOverrun(tx, deposit, at);
      const total = (deposit?.remaining_micro ?? 0) + p.amountMicro;
      const discountPpm = Math.max(0, Math.min(PPM - 1, Math.floor(p.discountFor(total))));
      await billing.adjustCredit(p.userId, -p.amountMicro, tx);
      await d.payments.insert(
        [{ user_id: p.userId, amount_micro: -p.amountMicro, kind: 'prepay', counterparty_id: null, description: p.description, created_at: at }],
        tx,
      );
      if (deposit) {
        await deposits.update(
          deposit.id,
          { remaining_micro: total, prepaid_micro: deposit.prepaid_micro + p.amountMicro, discount_ppm: discountPpm, updated_at: at },
          tx,
        );
      } else {
        await deposits.insert(
          {
            contract_id: contract.id, user_id: p.userId, remaining_micro: total, prepaid_micro: p.amountMicro, refunded_micro: 0,
            discount_ppm: discountPpm, created_at: at, updated_at: at, closed_at: null,
          },
          tx,
        );
      }
      deposit = (await deposits.openOf(contract.id, tx))!;
      for (const m of meters) {
        if (m.running) await resegment(tx, m, at, m.funded ? (m.list_rate_micro_per_hour ?? m.rate_micro_per_hour) : m.rate_micro_per_hour, deposit);
      }
      await billing.touchContract(contract.id, at, tx);
      await reschedule(tx, contract.id, at);
      await d.creditChanged(tx, p.userId);
      return { depositMicro: total, discountPpm };
    },

    /**
     * Closes the contract's deposit once its meters are stopped (the contract ends): what is left goes back to the
     * credit, recorded as a `deposit_refund` payment. Returns the user whose credit changed, if any.
     */
    async close(tx: Tx, contractId: number, at: number, description: string): Promise<number | undefined> {
      const deposit = await deposits.openOf(contractId, tx);
      if (!deposit) return undefined;
      await d.scheduler.cancel(depositRef(contractId), { tx, kind: DEPOSIT_JOB, skipRunning: true });
      await settleOverrun(tx, deposit, at);
      const refund = deposit.remaining_micro;
      if (refund > 0) {
        await billing.adjustCredit(deposit.user_id, refund, tx);
        await d.payments.insert(
          [{ user_id: deposit.user_id, amount_micro: refund, kind: 'deposit_refund', counterparty_id: null, description, created_at: at }],
          tx,
        );
      }
      await deposits.update(deposit.id, { remaining_micro: 0, refunded_micro: deposit.refunded_micro + refund, closed_at: at, updated_at: at }, tx);
      return deposit.user_id;
    },

    /** The contract's deposit as it stands at second `at` (all zero when it never had one). */
    async statusOf(contractId: number | undefined, at: number, tx: Tx = d.db): Promise<DepositStatus> {
      const deposit = contractId === undefined ? undefined : await deposits.of(contractId, tx);
      if (!deposit) return { open: false, remainingMicro: 0, prepaidMicro: 0, refundedMicro: 0, discountPpm: 0 };
      const funded = deposit.closed_at === null ? (await billing.meters(deposit.contract_id, tx)).filter((m) => m.running && m.funded) : [];
      const pending = Number(funded.reduce((a, m) => a + pendingAt(m, wholeSecond(at)), 0n));
      const spent = deposit.closed_at === null && deposit.remaining_micro - pending <= 0;
      return {
        open: deposit.closed_at === null && !spent,
        remainingMicro: Math.max(0, deposit.remaining_micro - pending),
        prepaidMicro: deposit.prepaid_micro,
        refundedMicro: deposit.refunded_micro,
        discountPpm: spent ? 0 : deposit.discount_ppm,
      };
    },

    coveredSources: (userId: number, tx: Tx) => deposits.coveredSources(userId, tx),
  };
}

export type Deposits = ReturnType<typeof depositsFactory>;
