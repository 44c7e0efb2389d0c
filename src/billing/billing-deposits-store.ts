import type { Selectable } from 'kysely';
import type { DialectName, Tx } from '../platform/db/connect.js';
import { prepared } from '../platform/db/prepared.js';
import type { BillingDepositsTable } from './billing-tables.js';

export type DepositRow = Selectable<BillingDepositsTable>;

/** The deposits' SQL (billing-deposits.ts). Every function takes the caller's transaction. */
export function billingDepositsStore(db: Tx, dialect: DialectName) {
  const pg = dialect === 'postgres';
  const byContract = (q: { contract: number }) => db.selectFrom('billing_deposits').selectAll().where('contract_id', '=', q.contract);
  // Read on every meter start of an existing contract (a boot, a restart): built once (platform/db/prepared.ts).
  const openOf = prepared(['contract'], (q: { contract: number }) => {
    const sel = byContract(q).where('closed_at', 'is', null);
    return pg ? sel.forUpdate() : sel;
  });
  const num = (r: DepositRow): DepositRow => ({
    ...r,
    remaining_micro: Number(r.remaining_micro),
    prepaid_micro: Number(r.prepaid_micro),
    refunded_micro: Number(r.refunded_micro),
    discount_ppm: Number(r.discount_ppm),
  });

  return {
    /** The contract's open deposit (locked on PostgreSQL), if any. */
    async openOf(contractId: number, tx: Tx = db): Promise<DepositRow | undefined> {
      const r = (await openOf(tx, { contract: contractId })).rows[0];
      return r && num(r);
    },

    /** The contract's deposit, open or closed. */
    async of(contractId: number, tx: Tx = db): Promise<DepositRow | undefined> {
      const r = await tx.selectFrom('billing_deposits').selectAll().where('contract_id', '=', contractId).executeTakeFirst();
      return r && num(r);
    },

    async insert(row: Omit<DepositRow, 'id'>, tx: Tx = db): Promise<void> {
      await tx.insertInto('billing_deposits').values(row).execute();
    },

    async update(id: number, set: Partial<Omit<DepositRow, 'id' | 'contract_id' | 'user_id'>>, tx: Tx = db): Promise<void> {
      await tx.updateTable('billing_deposits').set(set).where('id', '=', id).execute();
    },

    /** Takes `amount` from what the deposit has left (it may go below zero by the last second's charge). */
    async debit(contractId: number, amountMicro: number, tx: Tx = db): Promise<void> {
      await tx
        .updateTable('billing_deposits')
        .set((eb) => ({ remaining_micro: eb(eb.ref('remaining_micro'), '-', amountMicro) }))
        .where('contract_id', '=', contractId)
        .execute();
    },

    /** Sources of the user's contracts whose open deposit has something left: credit exhaustion spares them. */
    async coveredSources(userId: number, tx: Tx = db): Promise<Set<string>> {
      const rows = await tx
        .selectFrom('billing_deposits as d')
        .innerJoin('billing_contracts as c', 'c.id', 'd.contract_id')
        .select('c.source')
        .where('d.user_id', '=', userId)
        .where('d.closed_at', 'is', null)
        .where('d.remaining_micro', '>', 0)
        .execute();
      return new Set(rows.map((r) => r.source));
    },
  };
}

export type BillingDepositsStore = ReturnType<typeof billingDepositsStore>;
