import type { Insertable, Selectable } from 'kysely';
import type { DialectName, Tx } from '../platform/db/connect.js';
import type { Scope } from '../platform/auth.js';
import type { BillingPaymentsTable } from './billing-tables.js';

export type PaymentRow = Selectable<BillingPaymentsTable>;

/** A day's charge of one contract item, with its contract, as invoices list them. */
export interface ChargeDayRow {
  source: string;
  description: string;
  kind: string;
  day: number;
  amount_micro: number;
  start_at: number;
  end_at: number;
}

export function billingPaymentsStore(db: Tx, dialect: DialectName) {
  return {
    async insert(rows: Insertable<BillingPaymentsTable>[], tx: Tx = db): Promise<void> {
      await tx.insertInto('billing_payments').values(rows).execute();
    },

    /** Locks the users' rows in id order (PostgreSQL), so two transfers between the same pair never deadlock. */
    async lockUsers(ids: number[], tx: Tx): Promise<void> {
      if (dialect !== 'postgres') return; // SQLite: one writer; the transaction already excludes the others
      await tx.selectFrom('users').select('id').where('id', 'in', ids).orderBy('id').forUpdate().execute();
    },

    /** Payments of a user with `from <= created_at <= to`, oldest first. */
    async paymentsOf(userId: number, from: number, to: number, tx: Tx = db): Promise<PaymentRow[]> {
      return tx
        .selectFrom('billing_payments')
        .selectAll()
        .where('user_id', '=', userId)
        // Whole seconds, as the column is (see chargeDays).
        .where('created_at', '>=', Math.ceil(from))
        .where('created_at', '<=', Math.floor(to))
        .orderBy('created_at')
        .orderBy('id')
        .execute();
    },

    /** Every payment of a user, for the invoice search (filters run in memory over these few rows). */
    async allPaymentsOf(userId: number, tx: Tx = db): Promise<PaymentRow[]> {
      return tx.selectFrom('billing_payments').selectAll().where('user_id', '=', userId).orderBy('id').execute();
    },

    /** The day rows of the scope's contracts that overlap [from, to]. */
    async chargeDays(scope: Scope, from: number, to: number, tx: Tx = db): Promise<ChargeDayRow[]> {
      let q = tx
        .selectFrom('billing_charges as ch')
        .innerJoin('billing_contracts as c', 'c.id', 'ch.contract_id')
        .select(['c.source', 'c.description', 'ch.kind', 'ch.day', 'ch.amount_micro', 'ch.start_at', 'ch.end_at'])
        // Charge and payment times are whole seconds (bigint on PostgreSQL, where a bound with a fraction, as a real
        // clock's default range has, was an error): the same range in whole seconds.
        .where('ch.start_at', '<=', Math.floor(to))
        .where('ch.end_at', '>=', Math.ceil(from));
      q = scope.teamId === null ? q.where('c.user_id', '=', scope.userId).where('c.team_id', 'is', null) : q.where('c.team_id', '=', scope.teamId);
      const rows = await q.orderBy('ch.day').orderBy('c.id').orderBy('ch.kind').execute();
      return rows.map((r) => ({ ...r, amount_micro: Number(r.amount_micro), day: Number(r.day), start_at: Number(r.start_at), end_at: Number(r.end_at) }));
    },
  };
}

export type BillingPaymentsStore = ReturnType<typeof billingPaymentsStore>;
