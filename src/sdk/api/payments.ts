/** Credit transfers and invoices (`/api/v0/commands/transfer_credit/`, `/api/v0/users/me/invoices`, `/api/v0/invoices`). */
import type { Static } from 'typebox';
import type { InvoiceSearchReply, InvoicesQuery, InvoicesReply, OkMsgReply, TransferCreditBody } from '../../billing/billing-payments-schemas.js';
import type { Transport } from '../transport.js';

export type InvoicesReplyBody = Static<typeof InvoicesReply>;
export type InvoiceRecord = Static<typeof InvoiceSearchReply>[number];

export function paymentsApi(t: Transport) {
  return {
    /** Sends `amount` dollars to `recipient` (an account e-mail or a user id). */
    transferCredit: (recipient: string, amount: number) =>
      t.request<Static<typeof OkMsgReply>>('PUT', '/api/v0/commands/transfer_credit/', { body: { sender: 'me', recipient, amount } satisfies TransferCreditBody }),
    /** Charges and payments between two times (Unix seconds; default the last day). */
    invoices: (q: { sdate?: number; edate?: number; incCharges?: boolean } = {}) => {
      const query: Record<string, string> = { owner: 'me' } satisfies Partial<Record<keyof Static<typeof InvoicesQuery>, string>>;
      if (q.sdate !== undefined) query.sdate = String(q.sdate);
      if (q.edate !== undefined) query.edate = String(q.edate);
      if (q.incCharges !== undefined) query.inc_charges = String(q.incCharges);
      return t.request<InvoicesReplyBody>('GET', '/api/v0/users/me/invoices', { query });
    },
    /** Invoice records matching `{field: {op: value}}` filters. */
    searchInvoices: (filters: Record<string, Record<string, unknown>> = {}) =>
      t.request<InvoiceRecord[]>('GET', '/api/v0/invoices', { query: { select_cols: '["*"]', select_filters: JSON.stringify(filters) } }),
  };
}
