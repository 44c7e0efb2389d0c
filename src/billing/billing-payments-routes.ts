import type { TypedApp } from '../platform/http.js';
import { principalOf, scopeOf } from '../platform/auth.js';
import { ApiError } from '../platform/errors.js';
import { ErrorReply } from '../platform/schemas.js';
import { filterInvoices, parseInvoiceFilters } from './billing-invoice-search.js';
import type { PaymentsService } from './billing-payments.js';
import { InvoiceSearchQuery, InvoiceSearchReply, InvoicesQuery, InvoicesReply, OkMsgReply, TransferCreditBody } from './billing-payments-schemas.js';

const errors = { 400: ErrorReply, 401: ErrorReply, 402: ErrorReply, 403: ErrorReply, 404: ErrorReply };

/** Credit transfers and invoices, as `vastai transfer credit`, `show invoices` and `search invoices` call them. */
export async function billingPaymentsRoutes(app: TypedApp, { payments }: { payments: PaymentsService }): Promise<void> {
  app.put(
    '/api/v0/commands/transfer_credit/',
    {
      config: { category: 'billing_write' },
      schema: { summary: 'Send credit to another account', tags: ['billing'], body: TransferCreditBody, response: { 200: OkMsgReply, ...errors } },
    },
    async (request) => {
      const me = principalOf(request).user.id;
      const { sender, recipient, amount } = request.body;
      if (sender !== undefined && sender !== 'me' && sender !== me) throw new ApiError('permission_denied', 'you can send credit only from your own account (sender "me")');
      return payments.transfer(me, String(recipient), amount);
    },
  );

  app.get(
    '/api/v0/users/me/invoices',
    {
      config: { category: 'billing_read' },
      schema: { summary: 'Charges and payments in a date range', tags: ['billing'], querystring: InvoicesQuery, response: { 200: InvoicesReply, ...errors } },
    },
    async (request) => payments.invoices(scopeOf(principalOf(request)), request.query),
  );

  app.get(
    '/api/v0/invoices',
    {
      config: { category: 'billing_read' },
      schema: { summary: 'Search your invoice records', tags: ['billing'], querystring: InvoiceSearchQuery, response: { 200: InvoiceSearchReply, ...errors } },
    },
    async (request) => {
      const filters = parseInvoiceFilters(request.query.select_filters);
      return filterInvoices(await payments.invoiceRecords(principalOf(request).user.id), filters);
    },
  );
}
