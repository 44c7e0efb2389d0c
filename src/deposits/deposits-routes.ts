import type { TypedApp } from '../platform/http.js';
import { principalOf } from '../platform/auth.js';
import { ErrorReply } from '../platform/schemas.js';
import { IdParams } from '../instances/instances-schemas.js';
import type { DepositsService } from './deposits-service.js';
import { DepositQuery, DepositReply, PrepayBody, PrepayReply } from './deposits-schemas.js';

const tags = ['instances'];
const errors = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply, 404: ErrorReply };

/** Prepaid instances: `prepay instance` and `show deposit` (docs/spec/client-compat-more.md §c; policy in deposits-policy.ts). */
export async function depositsRoutes(app: TypedApp, { deposits }: { deposits: DepositsService }): Promise<void> {
  app.put('/api/v0/instances/prepay/:id/', {
    config: { category: 'instance_write' },
    schema: {
      tags,
      summary: 'Prepay an on-demand instance: credit moves into its deposit, which its charges draw from first, at a discount',
      description: 'Discount by the months the deposit covers at list rates: 20 % from 1, 30 % from 3, 40 % from 6, at most the '
        + 'machine\'s `credit_discount_max`. Destroying the instance refunds what is left.',
      params: IdParams,
      body: PrepayBody,
      response: { 200: PrepayReply, 402: ErrorReply, ...errors },
      // (403 also when a team instance is paid by another member: the deposit is that member's credit.)
    },
  }, async (request) => deposits.prepay(principalOf(request), request.params.id, request.body.amount));

  app.get('/api/v0/instances/balance/:id/', {
    config: { category: 'instance_read' },
    schema: {
      tags,
      summary: 'An instance\'s prepaid deposit: what is left, its discount, what it covers',
      params: IdParams,
      querystring: DepositQuery,
      response: { 200: DepositReply, ...errors },
    },
  }, async (request) => deposits.show(principalOf(request), request.params.id));
}
