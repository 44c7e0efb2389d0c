/**
 * Starting many meters at once (BillingApi `startMeters`): a simulated host's pass starts the compute billing of every
 * instance that reached running in it, and on PostgreSQL every statement is a round trip. The common case, a meter of
 * a kind its contract does not have yet on a contract without a deposit (an instance running for the first time since
 * its rent opened the contract), is written for all in a few statements; anything else goes through `startMeter`.
 * The rows, charges and jobs are those of starting them one by one (test/billing-start-meters.test.ts).
 */
import type { Tx } from '../platform/db/connect.js';
import { wholeSecond } from './billing-accrual.js';
import type { MeterStart } from './billing-contract.js';
import type { BillingStore } from './billing-store.js';

export interface StartMetersDeps {
  store: BillingStore;
  startMeter(tx: Tx, m: MeterStart): Promise<void>;
  /** Starts the chain of bulk settlements unless it runs (billing-service.ts). */
  ensureSettleChain(tx: Tx, at: number): Promise<void>;
  /** Re-times the user's credit check after their burn rate changed. */
  creditChanged(tx: Tx, userId: number): Promise<void>;
}

export function startMetersFactory({ store: billing, startMeter, ensureSettleChain, creditChanged }: StartMetersDeps) {
  /**
   * The contracts locked in id order, the new meters, each user's running totals, the contracts touched, the settle
   * chain claimed once and each user's credit check re-timed once: what `startMeter` does for each, with the same
   * end. Meters of different kinds or seconds, or two of one contract, go one by one.
   */
  return async function startMeters(tx: Tx, ms: readonly MeterStart[]): Promise<void> {
    const at = ms.length ? wholeSecond(ms[0].at) : 0;
    const kind = ms[0]?.kind;
    const oneByOne = ms.length < 2 || new Set(ms.map((m) => m.contract)).size < ms.length || ms.some((m) => m.kind !== kind || wholeSecond(m.at) !== at);
    if (oneByOne) {
      for (const m of ms) await startMeter(tx, m);
      return;
    }
    const found = new Map((await billing.contractsToStart(ms.map((m) => m.contract), kind!, tx)).map((c) => [c.source, c]));
    const fresh = ms.filter((m) => {
      const c = found.get(m.contract);
      return c !== undefined && !c.has_meter && !c.has_deposit;
    });
    // A restart (a new segment of its meter), a funded contract, a contract not opened yet: as one alone.
    for (const m of ms) if (!fresh.includes(m)) await startMeter(tx, m);
    if (fresh.length === 0) return;
    await billing.insertMeters(
      fresh.map((m) => ({
        contract_id: found.get(m.contract)!.id, kind: m.kind, user_id: m.userId, rate_micro_per_hour: m.rateMicroPerHour, seg_start: at,
        settled_until: at, seg_charged_micro: 0, running: 1, funded: 0, list_rate_micro_per_hour: null,
      })),
      tx,
    );
    // The running totals move by the sum of a user's new rates: at one second, as they would meter by meter.
    const rates = new Map<number, number>();
    for (const m of fresh) rates.set(m.userId, (rates.get(m.userId) ?? 0) + m.rateMicroPerHour);
    await billing.moveRatesMany(at, [...rates].map(([userId, rate]) => ({ userId, rate, accrued: 0, charged: 0 })), tx);
    await billing.startedContracts(
      fresh.map((m) => {
        const c = found.get(m.contract)!;
        // As `startMeter` writes an existing contract: the meter's description, its metadata merged in.
        const metadata = c.description !== m.description || m.metadata ? JSON.stringify({ ...JSON.parse(c.metadata), ...m.metadata }) : c.metadata;
        return { id: c.id, description: m.description, metadata };
      }),
      at,
      tx,
    );
    // Once for all: the kv claim of the settle chain used to run for every meter started.
    await ensureSettleChain(tx, at);
    for (const userId of rates.keys()) await creditChanged(tx, userId);
  };
}
