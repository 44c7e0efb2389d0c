import type { TypedApp } from '../platform/http.js';
import { principalOf, scopeOf } from '../platform/auth.js';
import { ErrorReply } from '../platform/schemas.js';
import type { BillingService } from './billing-service.js';
import { ChargesQuery, ChargesReply } from './billing-schemas.js';

export async function billingRoutes(app: TypedApp, { billing }: { billing: BillingService }): Promise<void> {
  app.get(
    '/api/v0/charges/',
    {
      config: { category: 'billing_read' },
      schema: {
        summary: 'Show charges per instance, volume or serverless contract',
        tags: ['billing'],
        querystring: ChargesQuery,
        response: {
          200: ChargesReply,
          400: ErrorReply,
          401: ErrorReply,
          403: ErrorReply,
        },
      },
    },
    async (request) => billing.charges.list(scopeOf(principalOf(request)), request.query),
  );
}
