/**
 * Credit that moves other than by charges (client-compat-more §b): credit added, transfers between users, and the
 * invoices that list both with the charges of the ledger.
 */
import type { Clock } from '../platform/clock.js';
import type { Scope } from '../platform/auth.js';
import type { Store, Tx } from '../platform/db/connect.js';
import { ApiError, badRequest } from '../platform/errors.js';
import { toDollars, toMicro } from '../platform/money.js';
import type { BillingPaymentsStore, ChargeDayRow, PaymentRow } from './billing-payments-store.js';

/** Largest single transfer, in dollars: a typo guard, far above any real account. */
export const TRANSFER_MAX_DOLLARS = 1_000_000;
/** The invoice window when the query names none: the last day (as the vastai client's own default). */
export const INVOICE_DEFAULT_WINDOW_S = 86_400;

/** The user a transfer goes to, found by the users feature (by decimal id or e-mail). */
export type FindUser = (recipient: string) => Promise<{ id: number; email: string } | undefined>;

export interface PaymentsDeps {
  store: Store;
  clock: Clock;
  payments: BillingPaymentsStore;
  /** Billing's exact balance, its credit adjustment, and its credit-check re-timing (billing-service.ts). */
  balance(userId: number, tx: Tx): Promise<number>;
  adjustCredit(userId: number, deltaMicro: number, tx: Tx): Promise<number | undefined>;
  creditChanged(tx: Tx, userId: number): Promise<void>;
  findUser: FindUser;
}

export interface InvoiceRow {
  id: string;
  description: string;
  quantity: number | null;
  rate: number | null;
  amount: number;
  timestamp: number;
  type: 'charge' | 'payment';
  instance_id: number | null;
}

const instanceOf = (source: string) => (source.startsWith('instance-') ? Number(source.slice('instance-'.length)) : null);
const round = (x: number, places: number) => Math.round(x * 10 ** places) / 10 ** places;

function chargeRow(c: ChargeDayRow): InvoiceRow {
  const hours = Math.max(0, c.end_at - c.start_at) / 3600;
  const amount = toDollars(c.amount_micro);
  return {
    id: `${c.source}-${c.kind}-${c.day}`,
    description: `${c.description} (${c.kind})`,
    quantity: round(hours, 4),
    rate: hours > 0 ? round(amount / hours, 6) : null,
    amount,
    timestamp: c.end_at,
    type: 'charge',
    instance_id: instanceOf(c.source),
  };
}

function paymentRow(p: PaymentRow): InvoiceRow {
  return { id: `payment-${p.id}`, description: p.description, quantity: null, rate: null, amount: toDollars(Number(p.amount_micro)), timestamp: Number(p.created_at), type: 'payment', instance_id: null };
}

export function paymentsFactory({ store, clock, payments, balance, adjustCredit, creditChanged, findUser }: PaymentsDeps) {
  const now = () => Math.floor(clock.now());
  return {
    /** Records credit added to a user (an admin or the emulator), inside the caller's transaction. */
    async recordCredit(tx: Tx, userId: number, amountMicro: number, description: string): Promise<void> {
      await payments.insert([{ user_id: userId, amount_micro: amountMicro, kind: 'credit', counterparty_id: null, description, created_at: now() }], tx);
    },

    /**
     * `PUT /api/v0/commands/transfer_credit/`: moves `amount` dollars from the sender to the recipient (an e-mail or
     * a user id), atomically: both balances and both payment rows commit together, and the sender's exact balance
     * (running charges included) must cover it, so no balance goes negative by a transfer.
     */
    async transfer(senderId: number, recipient: string, amount: number): Promise<{ success: true; msg: string }> {
      if (!Number.isFinite(amount) || amount <= 0) throw badRequest('amount must be a positive number of dollars');
      if (amount > TRANSFER_MAX_DOLLARS) throw badRequest(`amount must be at most ${TRANSFER_MAX_DOLLARS} dollars`);
      const micro = toMicro(amount);
      if (micro <= 0) throw badRequest('amount must be at least $0.000001');
      const to = await findUser(recipient.trim());
      if (!to) throw new ApiError('not_found', `recipient ${recipient} not found: give a user id or an account e-mail`);
      if (to.id === senderId) throw badRequest('recipient is your own account');
      await store.db.transaction().execute(async (tx) => {
        await payments.lockUsers([senderId, to.id], tx);
        const left = await balance(senderId, tx);
        if (left < micro) {
          throw new ApiError('insufficient_credit', `not enough credit: your balance is $${toDollars(left).toFixed(2)}, less than the $${amount} to send`);
        }
        await adjustCredit(senderId, -micro, tx);
        await adjustCredit(to.id, micro, tx);
        const at = now();
        await payments.insert(
          [
            { user_id: senderId, amount_micro: -micro, kind: 'transfer_out', counterparty_id: to.id, description: `credit sent to user ${to.id}`, created_at: at },
            { user_id: to.id, amount_micro: micro, kind: 'transfer_in', counterparty_id: senderId, description: `credit received from user ${senderId}`, created_at: at },
          ],
          tx,
        );
        await creditChanged(tx, senderId);
        await creditChanged(tx, to.id);
      });
      return { success: true, msg: `Sent $${amount} to ${recipient}` };
    },

    /**
     * `GET /api/v0/users/me/invoices`: the ledger's day charges (unless `inc_charges` is false) and the payments in
     * [sdate, edate] (both included), oldest first; `current` is the balance now. Payments belong to the user, not to a team.
     */
    async invoices(scope: Scope, q: { sdate?: number; edate?: number; inc_charges?: boolean }) {
      const edate = q.edate ?? now();
      const sdate = q.sdate ?? edate - INVOICE_DEFAULT_WINDOW_S;
      if (sdate > edate) throw badRequest('sdate must not be after edate');
      const paid = scope.teamId === null ? (await payments.paymentsOf(scope.userId, sdate, edate)).map(paymentRow) : [];
      const charged = q.inc_charges === false ? [] : (await payments.chargeDays(scope, sdate, edate)).map(chargeRow);
      const invoices = [...charged, ...paid].sort((a, b) => a.timestamp - b.timestamp);
      return { success: true as const, invoices, current: { credit: toDollars(await balance(scope.userId, store.db)), sdate, edate } };
    },

    /** The user's payment rows in the invoice search's vocabulary (`amount_cents`, `is_credit`, `when` …). */
    async invoiceRecords(userId: number) {
      return (await payments.allPaymentsOf(userId)).map((p) => {
        const micro = Number(p.amount_micro);
        return {
          id: p.id,
          user_id: p.user_id,
          when: Number(p.created_at),
          paid_on: Number(p.created_at),
          payment_expected: null,
          amount_cents: Math.round(micro / 10_000),
          is_credit: micro > 0,
          is_delayed: false,
          service: p.kind,
          extra: p.description,
          transfer_group: p.counterparty_id === null ? null : String(p.counterparty_id),
          failed: false,
          refunded: false,
          is_check: false,
          // The card and payout processors' fields: gpuplane records no such payments.
          balance_before: null, balance_after: null, original_amount: null, event_id: null, cut_amount: null,
          cut_percent: null, stripe_charge: null, stripe_refund: null, stripe_payout: null, error: null, paypal_email: null,
        };
      });
    },
  };
}

export type PaymentsService = ReturnType<typeof paymentsFactory>;
