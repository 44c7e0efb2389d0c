import { kvState } from '../platform/db/kv.js';
import { dailyChargesOf } from './billing-host-charges-store.js';
import type { Clock } from '../platform/clock.js';
import type { Store, Tx } from '../platform/db/connect.js';
import { prepared } from '../platform/db/prepared.js';
import { ApiError } from '../platform/errors.js';
import { toDollars } from '../platform/money.js';
import type { JobContext, Scheduler } from '../platform/scheduler.js';
import { accrue, dayOf, SECONDS_PER_HOUR, wholeSecond } from './billing-accrual.js';
import type { BillingApi, ContractType, CreditExhaustedHook, ItemKind, MeterStart, ServerlessGroup } from './billing-contract.js';
import { billingStore, type MeterRow } from './billing-store.js';
import { chargesServiceFactory } from './billing-charges.js';
import { paymentsFactory, type FindUser } from './billing-payments.js';
import { billingPaymentsStore } from './billing-payments-store.js';
import { billingDepositsStore } from './billing-deposits-store.js';
import { depositsFactory, type PrepayResult } from './billing-deposits.js';
import { discountedRate } from './billing-contract.js';
import { startMetersFactory } from './billing-start-meters.js';

/**
 * How often running meters are settled in bulk (service time). Between settlements the charges API and `balance`
 * add the accrual on the fly, and credit exhaustion is scheduled at its exact second, so the period only bounds how
 * stale the stored balance (`users.credit_micro`) may be.
 */
export const SETTLE_PERIOD_S = 600;
export const SETTLE_JOB = 'billing.settle';
export const CREDIT_JOB = 'billing.credit';
/** kv row holding the due time of the next bulk settlement: one chain of settle jobs across every process. */
const SETTLE_CHAIN_KEY = 'billing_settle_next';
const SETTLE_REF = 'billing:settle';
const creditRef = (userId: number) => `credit:${userId}`;

export interface BillingDeps {
  store: Store;
  clock: Clock;
  scheduler: Scheduler;
  /** The recipient of a credit transfer, by decimal user id or e-mail (the users feature). */
  findUser?: FindUser;
}

export function billingServiceFactory({ store, clock, scheduler, findUser = async () => undefined }: BillingDeps) {
  const billing = billingStore(store.db, store.dialect);
  const kv = kvState(store.db);
  const paymentsStore = billingPaymentsStore(store.db, store.dialect);
  const exhaustedHooks: CreditExhaustedHook[] = [];
  /** Users whose exhaustion hooks are running in this process. */
  const exhausting = new Set<number>();
  /** Credit added, transfers and invoices (billing-payments.ts). Its closures run only at request time. */
  const payments = paymentsFactory({
    store, clock, payments: paymentsStore, findUser,
    balance: (userId, tx) => balance(userId, tx),
    adjustCredit: (userId, delta, tx) => billing.adjustCredit(userId, delta, tx),
    creditChanged: (tx, userId) => scheduleCreditCheck(tx, userId),
  });

  /** Charges one meter up to second `to` (per UTC day) and debits its user, or its deposit when it is funded. */
  async function settleMeter(tx: Tx, meter: MeterRow, to: number): Promise<void> {
    const due = accrue(meter, to);
    if (due.days.length === 0) return;
    for (const d of due.days) await billing.addCharge(meter.contract_id, meter.kind, d, tx);
    await billing.updateMeter(meter.id, { seg_charged_micro: due.cumulative, settled_until: to }, tx);
    const charged = due.cumulative - meter.seg_charged_micro;
    if (meter.funded) {
      if (due.total !== 0) await depositsStore.debit(meter.contract_id, due.total, tx);
    } else {
      if (due.total !== 0) await billing.adjustCredit(meter.user_id, -due.total, tx);
      if (meter.running && charged !== 0) await billing.moveRates(meter.user_id, to, { rate: 0, accrued: 0, charged }, tx);
    }
    meter.seg_charged_micro = due.cumulative;
    meter.settled_until = to;
  }

  /** What a running meter adds to its user's running totals at second `at` (negated, what stopping it removes). */
  const counted = (m: Pick<MeterRow, 'rate_micro_per_hour' | 'seg_start' | 'seg_charged_micro'>, at: number) => ({
    rate: m.rate_micro_per_hour,
    accrued: m.rate_micro_per_hour * (at - m.seg_start),
    charged: m.seg_charged_micro,
  });
  const negated = (d: { rate: number; accrued: number; charged: number }) => ({ rate: -d.rate, accrued: -d.accrued, charged: -d.charged });

  /** The exact balance: stored credit minus what the user's running meters accrued since their last settlement. */
  async function balance(userId: number, tx: Tx = store.db): Promise<number> {
    const ledger = await exactLedger(userId, wholeSecond(clock.now()), tx);
    if (ledger === undefined) throw new ApiError('not_found', 'user not found');
    return ledger.left;
  }

  /** The exact balance (`left`) and burn rate at whole second `at`, from every running meter of the user. */
  async function exactLedger(userId: number, at: number, tx: Tx): Promise<{ left: number; rate: number } | undefined> {
    const ledger = await billing.ledgerOf(userId, at, tx);
    return ledger && { left: ledger.credit - ledger.pending, rate: ledger.rate };
  }

  /**
   * Schedules the user's credit check at the second the balance reaches zero at the current burn rate. The balance is
   * the lower bound from the running totals (one row, whatever the number of instances), so the check may come a
   * little early, never late; the check reads the exact balance and, with it, schedules the next one. Only when the
   * bound is not above zero is the exact balance read here.
   *
   * The user's pending checks are cancelled, but not one that is running now (the scheduler's claim locks its row
   * until it commits). Waiting for it would make every billing call of the user queue behind a check that may itself
   * be waiting for that call's instance: a deadlock on PostgreSQL. A running check ends by itself; the check this
   * call schedules next re-times it, and an extra check is harmless (it only re-reads the balance).
   */
  async function scheduleCreditCheck(
    tx: Tx,
    userId: number,
    exact?: { left: number; rate: number },
    /** The quick ledger at `now`, when the caller's statement read it (`moveRatesReadingLedger`). */
    read?: { now: number; quick: { low: number; rate: number } | undefined },
  ): Promise<void> {
    // The hooks of a credit check stop meters: that must not schedule the same check again.
    if (exhausting.has(userId)) return;
    const now = read?.now ?? wholeSecond(clock.now());
    let ledger = exact;
    if (!ledger) {
      const quick = read ? read.quick : await billing.quickLedgerOf(userId, now, tx);
      ledger = quick && { left: quick.low, rate: quick.rate };
      if (quick && quick.rate > 0 && quick.low <= 0) ledger = await exactLedger(userId, now, tx);
    }
    let due: number | null = null;
    if (ledger && ledger.rate > 0) {
      const { left, rate } = ledger;
      due = now + (left <= 0 ? 0 : Number((BigInt(left) * BigInt(SECONDS_PER_HOUR) + BigInt(rate) - 1n) / BigInt(rate)));
    }
    // The pending checks go (one running now is left), the new one comes: one statement on PostgreSQL.
    await scheduler.reschedule(CREDIT_JOB, creditRef(userId), due, { user_id: userId }, { tx });
  }

  /**
   * Starts the chain of bulk settlements unless one is already scheduled (the kv row is the lock). `claimed`: the
   * caller's statement made the claim already (`moveRatesReadingLedger`), and this is what it found.
   */
  async function ensureSettleChain(tx: Tx, at: number, claimed?: boolean): Promise<void> {
    const next = settleChainNext(at);
    if (claimed ?? (await kv.claim(tx, SETTLE_CHAIN_KEY, String(next)))) await scheduler.schedule(SETTLE_JOB, next, {}, { tx, ref: SETTLE_REF });
  }

  /** The period boundary after second `at`: where a chain of settlements started then begins. */
  function settleChainNext(at: number): number {
    return (Math.floor(at / SETTLE_PERIOD_S) + 1) * SETTLE_PERIOD_S;
  }

  /** Bulk settlement at a period boundary: every running meter charged up to `dueAt`. */
  async function settleAll(_payload: unknown, ctx: JobContext): Promise<void> {
    const to = wholeSecond(ctx.dueAt);
    const day = dayOf(to - 1);
    await billing.lockContractsOf({ settledBefore: to }, ctx.tx);
    // Meters settled before today's start (a lagging real clock, a day boundary) are split per day one by one.
    for (const m of await billing.laggingMeters(day, to, ctx.tx)) {
      await settleMeter(ctx.tx, m, to);
      await billing.touchContract(m.contract_id, to, ctx.tx);
    }
    await billing.settleSameDay(day, to, ctx.tx);
    if (await billing.anyRunning(ctx.tx)) {
      const next = to + SETTLE_PERIOD_S;
      await kv.set(ctx.tx, SETTLE_CHAIN_KEY, String(next));
      await scheduler.schedule(SETTLE_JOB, next, {}, { tx: ctx.tx, ref: SETTLE_REF });
    } else {
      await kv.remove(ctx.tx, SETTLE_CHAIN_KEY);
    }
  }

  /**
   * The user's credit check: at zero balance, let the features stop what they run. It reads the exact balance
   * (stored credit minus accrual not yet settled) without locking anything, and leaves the settling to the meters
   * the hooks stop and to the bulk settlement: locking billing rows here first and instance rows in the hooks after
   * would be the reverse of a request's order (instance, then billing) and could deadlock on PostgreSQL. The hooks
   * lock their rows, then billing's through `lockBilling` (see CreditExhaustedHook).
   */
  async function checkCredit(payload: { user_id: number }, ctx: JobContext): Promise<void> {
    const userId = payload.user_id;
    const ledger = await exactLedger(userId, wholeSecond(clock.now()), ctx.tx);
    if (ledger === undefined) return;
    if (ledger.left > 0) {
      await scheduleCreditCheck(ctx.tx, userId, ledger);
      return;
    }
    exhausting.add(userId);
    try {
      const lockBilling = () => billing.lockContractsOf({ userId }, ctx.tx);
      // What a deposit still pays keeps running (billing-deposits.ts).
      const covered = await deposits.coveredSources(userId, ctx.tx);
      for (const hook of exhaustedHooks) await hook(ctx.tx, { userId, at: ctx.now, lockBilling, covered });
    } finally {
      exhausting.delete(userId);
    }
  }

  scheduler.register(SETTLE_JOB, settleAll);
  scheduler.register(CREDIT_JOB, checkCredit);

  /**
   * Stops the running meters among `meters` (of one contract) at `at`, each settled first (`settleMeter`), in fewer
   * statements than one stop after another: their charges in one insert, the meters settled and stopped in one update,
   * and per user one credit debit and one change of the running totals (the charge a settlement adds to them and what
   * the stop removes, at the same second, sum to removing the meter's rate, its accrual and what it had charged).
   */
  async function stopMeters(tx: Tx, meters: MeterRow[], at: number): Promise<void> {
    const charges: Parameters<typeof billing.addCharges>[0] = [];
    const stopped: Parameters<typeof billing.stopMetersSettled>[0][number][] = [];
    const fromDeposits: { contractId: number; total: number }[] = [];
    const debits = new Map<number, number>();
    const rates = new Map<string, { userId: number; to: number; rate: number; accrued: number; charged: number }>();
    for (const meter of meters) {
      if (!meter.running) continue;
      const to = Math.max(at, meter.settled_until);
      const due = accrue(meter, to);
      for (const d of due.days) charges.push({ contractId: meter.contract_id, kind: meter.kind, charge: d });
      // Nothing due (`to` is where it was settled): the same values again.
      stopped.push({ id: meter.id, seg_charged_micro: due.cumulative, settled_until: to });
      if (meter.funded) {
        if (due.total !== 0) fromDeposits.push({ contractId: meter.contract_id, total: due.total });
      } else {
        debits.set(meter.user_id, (debits.get(meter.user_id) ?? 0) + due.total);
        const key = `${meter.user_id}@${to}`;
        const r = rates.get(key) ?? { userId: meter.user_id, to, rate: 0, accrued: 0, charged: 0 };
        const gone = negated(counted(meter, to));
        rates.set(key, { ...r, rate: r.rate + gone.rate, accrued: r.accrued + gone.accrued, charged: r.charged + gone.charged });
      }
      meter.seg_charged_micro = due.cumulative;
      meter.settled_until = to;
      meter.running = 0;
    }
    await billing.addCharges(charges, tx);
    await billing.stopMetersSettled(stopped, tx);
    for (const d of fromDeposits) await depositsStore.debit(d.contractId, d.total, tx);
    for (const [userId, total] of debits) if (total !== 0) await billing.adjustCredit(userId, -total, tx);
    for (const r of rates.values()) await billing.moveRates(r.userId, r.to, { rate: r.rate, accrued: r.accrued, charged: r.charged }, tx);
  }

  /** Prepaid deposits: funded meters, their exhaustion, the refund when a contract ends (billing-deposits.ts). */
  const depositsStore = billingDepositsStore(store.db, store.dialect);
  const deposits = depositsFactory({
    db: store.db, store: billing, deposits: depositsStore, payments: paymentsStore, scheduler, settleMeter, balance,
    creditChanged: (tx, userId) => scheduleCreditCheck(tx, userId),
  });

  const startMeters = startMetersFactory({
    store: billing,
    startMeter: (tx, m) => api.startMeter(tx, m),
    ensureSettleChain,
    creditChanged: (tx, userId) => scheduleCreditCheck(tx, userId),
  });

  const api = {
    async startMeter(tx: Tx, m: MeterStart): Promise<void> {
      const at = wholeSecond(m.at);
      const { contract, created } = await billing.openContract(
        {
          source: m.contract,
          type: m.type,
          user_id: m.userId,
          team_id: m.teamId,
          description: m.description,
          metadata: JSON.stringify(m.metadata ?? {}),
          start_at: at,
        },
        tx,
        1,
      );
      // A new contract (most rents) is written as it should be, with this meter as its one running meter.
      if (!created && (contract.description !== m.description || m.metadata)) {
        const metadata = { ...JSON.parse(contract.metadata), ...m.metadata };
        await billing.updateContract(contract.id, { description: m.description, metadata: JSON.stringify(metadata) }, tx);
      }
      const meters = created ? [] : await billing.meters(contract.id, tx);
      const meter = meters.find((x) => x.kind === m.kind);
      let read: Parameters<typeof scheduleCreditCheck>[3];
      let claimed: boolean | undefined;
      // A contract with a prepaid deposit left starts its meters funded, at the deposit's discount.
      const funding = created ? undefined : await deposits.fundingFor(tx, contract.id, meters, at);
      if (meter) {
        // A new segment: never before what was already settled, so no second is charged twice.
        await deposits.resegment(tx, meter, at, m.rateMicroPerHour, funding, m.userId);
      } else {
        const rate = funding ? discountedRate(m.rateMicroPerHour, funding.discount_ppm) : m.rateMicroPerHour;
        await billing.insertMeters([
          {
            contract_id: contract.id,
            kind: m.kind,
            user_id: m.userId,
            rate_micro_per_hour: rate,
            seg_start: at,
            settled_until: at,
            seg_charged_micro: 0,
            running: 1,
            funded: funding ? 1 : 0,
            list_rate_micro_per_hour: funding ? m.rateMicroPerHour : null,
          },
        ], tx);
        // The credit check's read comes with the running totals' change (nothing below changes either).
        // On PostgreSQL the settlement chain's claim too.
        if (!funding) {
          const now = wholeSecond(clock.now());
          const chain = { key: SETTLE_CHAIN_KEY, value: String(settleChainNext(at)) };
          const moved = await billing.moveRatesReadingLedger(m.userId, at, { rate, accrued: 0, charged: 0 }, now, tx, chain);
          read = { now, quick: moved.quick };
          claimed = moved.claimed;
        }
      }
      if (!created) await billing.touchContract(contract.id, at, tx);
      if (funding) await deposits.reschedule(tx, contract.id, at);
      await ensureSettleChain(tx, at, claimed);
      await scheduleCreditCheck(tx, m.userId, undefined, read);
    },

    /** Many meters at once, in a few statements for all (billing-start-meters.ts). */
    startMeters: (tx: Tx, ms: readonly MeterStart[]): Promise<void> => startMeters(tx, ms),

    async stopMeter(tx: Tx, m: { contract: string; kind: ItemKind; at: number }): Promise<void> {
      const contract = await billing.contractBySource(m.contract, tx);
      if (!contract) return;
      const meter = (await billing.meters(contract.id, tx)).find((x) => x.kind === m.kind);
      if (!meter?.running) return;
      const at = wholeSecond(m.at);
      await stopMeters(tx, [meter], at);
      await billing.touchContract(contract.id, at, tx);
      if (meter.funded) await deposits.reschedule(tx, contract.id, at);
      // No credit check is re-timed: a stop only lowers the burn rate (settling moves accrual into the credit, the
      // balance stays), so the zero balance comes later than the check already scheduled, which finds credit left
      // and re-times itself. Two statements saved on every stop and destroy, for a check that may run needlessly.
    },

    async stopContract(tx: Tx, m: { contract: string; at: number }): Promise<void> {
      const contract = await billing.contractBySource(m.contract, tx);
      if (!contract) return;
      const at = wholeSecond(m.at);
      await stopMeters(tx, await billing.meters(contract.id, tx), at);
      await billing.touchContract(contract.id, at, tx);
      // The contract ends: what its deposit has left goes back to the credit. No credit check is re-timed (stopMeter):
      // the balance reaches zero later than before, if ever.
      await deposits.close(tx, contract.id, at, `unused deposit of ${contract.source.replace("-", " ")} refunded`);
    },

    async changePayer(tx: Tx, m: { contract: string; userId: number; at: number }): Promise<void> {
      const contract = await billing.contractBySource(m.contract, tx);
      if (!contract || contract.user_id === m.userId) return;
      await billing.lockContract(contract.id, tx);
      const running = (await billing.meters(contract.id, tx)).filter((x) => x.running);
      // Settled and closed as the old payer's (their deposit's rest goes back to them), then opened again as the new
      // payer's: the same statements as a stop and a start, so the running totals and credit checks of both follow.
      await api.stopContract(tx, { contract: m.contract, at: m.at });
      await billing.updateContract(contract.id, { user_id: m.userId }, tx);
      for (const meter of running) {
        await api.startMeter(tx, {
          contract: m.contract, type: contract.type as ContractType, kind: meter.kind as ItemKind, userId: m.userId, teamId: contract.team_id,
          rateMicroPerHour: meter.list_rate_micro_per_hour ?? meter.rate_micro_per_hour, at: m.at, description: contract.description,
        });
      }
    },

    async addUsage(tx: Tx, m: Omit<MeterStart, 'rateMicroPerHour'> & { amountMicro: number }): Promise<void> {
      const at = wholeSecond(m.at);
      const { contract } = await billing.openContract(
        { source: m.contract, type: m.type, user_id: m.userId, team_id: m.teamId, description: m.description, metadata: JSON.stringify(m.metadata ?? {}), start_at: at },
        tx,
      );
      await billing.addCharge(contract.id, m.kind, { day: dayOf(at), amount: m.amountMicro, start: at, end: at }, tx);
      await billing.adjustCredit(m.userId, -m.amountMicro, tx);
      await billing.touchContract(contract.id, at, tx);
      await scheduleCreditCheck(tx, m.userId);
    },

    async assertCredit(userId: number, tx: Tx = store.db, contract?: string): Promise<void> {
      // The running totals' lower bound settles it in one row read; the exact balance only when it is not above zero.
      const now = wholeSecond(clock.now());
      const quick = await billing.quickLedgerOf(userId, now, tx);
      if (quick === undefined) throw new ApiError('not_found', 'user not found');
      if (quick.low <= 0 && (await balance(userId, tx)) <= 0) {
        // A contract whose prepaid deposit has something left starts on the deposit.
        if (contract !== undefined && (await deposits.coveredSources(userId, tx)).has(contract)) return;
        throw new ApiError('insufficient_credit', 'not enough credit: add credit to your account before starting anything that costs money');
      }
    },

    balance,
    async balanceOf(user: { id: number; credit_micro: number }, runningRate: number | undefined): Promise<number> {
      // Every running meter accrues at its rate, and none has a negative rate: a sum of 0 means nothing pending.
      return runningRate === 0 ? user.credit_micro : balance(user.id);
    },

    onCreditExhausted(hook: CreditExhaustedHook): void {
      exhaustedHooks.push(hook);
    },

    async setServerlessGroup(tx: Tx, contract: string, group: ServerlessGroup): Promise<void> {
      const row = await billing.contractBySource(contract, tx);
      if (!row) return;
      const endpointSource = `endpoint-${group.endpointId}`;
      const first = await billing.firstTreeKeyOf(endpointSource, tx);
      const metadata = { ...JSON.parse(row.metadata), endpoint_id: group.endpointId, workergroup_id: group.workergroupId };
      await billing.updateContract(
        row.id,
        {
          type: 'serverless',
          endpoint_source: endpointSource,
          workergroup_source: `workergroup-${group.workergroupId}`,
          tree_key: first ?? row.id,
          metadata: JSON.stringify(metadata),
        },
        tx,
      );
    },

    /** Emulator: adds (or, negative, removes) credit and re-times the user's credit check. */
    /** `POST /_emu/credit`: the user named by id or by account e-mail (exactly one), then `addCredit`. */
    async addCreditTo(who: { user_id?: number; email?: string }, amountMicro: number): Promise<{ success: true; credit: number }> {
      if ((who.user_id === undefined) === (who.email === undefined)) throw new ApiError('bad_request', 'body: give user_id or email (one of the two)');
      if (who.user_id !== undefined) return api.addCredit(who.user_id, amountMicro);
      const user = await findUser(who.email!.trim());
      // findUser also reads digits as an id: an e-mail names a user only by its address.
      if (!user || user.email.toLowerCase() !== who.email!.trim().toLowerCase()) throw new ApiError('not_found', `no user has the e-mail ${who.email}`);
      return api.addCredit(user.id, amountMicro);
    },

    async addCredit(userId: number, amountMicro: number): Promise<{ success: true; credit: number }> {
      return store.db.transaction().execute(async (tx) => {
        const credit = await billing.adjustCredit(userId, amountMicro, tx);
        if (credit === undefined) throw new ApiError('not_found', 'user not found');
        await payments.recordCredit(tx, userId, amountMicro, amountMicro >= 0 ? 'credit added' : 'credit removed');
        await scheduleCreditCheck(tx, userId);
        return { success: true as const, credit: toDollars(await balance(userId, tx)) };
      });
    },
  } satisfies BillingApi & Record<string, unknown>;

  /** The read side: `GET /api/v0/charges/`. */
  const charges = chargesServiceFactory({ db: store.db, dialect: store.dialect, clock });
  return {
    ...api, charges, payments, store: billing,
    /**
     * `prepay instance`: moves credit into the contract's deposit inside the caller's transaction (billing-deposits.ts).
     * The caller holds the instance locked and gives its discount policy.
     */
    prepay: (tx: Tx, p: Parameters<typeof deposits.prepay>[1]): Promise<PrepayResult> => deposits.prepay(tx, p),
    /** The contract's deposit at the current second (`show deposit`). */
    async depositOf(source: string, tx: Tx = store.db) {
      return deposits.statusOf(await billing.contractIdBySource(source, tx), clock.now(), tx);
    },
    /** Settled charges per contract and day, for hosts' earnings (billing-host-charges-store.ts). */
    dailyCharges: (sources: readonly string[], fromDay: number, toDay: number, tx: Tx = store.db) => dailyChargesOf(tx, sources, fromDay, toDay),
  };
}

export type BillingService = ReturnType<typeof billingServiceFactory>;
