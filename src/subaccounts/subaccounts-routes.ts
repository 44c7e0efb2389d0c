import type { TypedApp } from '../platform/http.js';
import { principalOf } from '../platform/auth.js';
import { ErrorReply } from '../platform/schemas.js';
import type { SubaccountsService } from './subaccounts-service.js';
import { SubaccountsReply } from './subaccounts-schemas.js';

/**
 * `GET /api/v0/subaccounts` (`vastai show subaccounts`). Creating one is `POST /api/v0/users/` with `parent_id`
 * (login-routes.ts, which serves the sign-up on that route).
 */
export async function subaccountsRoutes(app: TypedApp, { subaccounts }: { subaccounts: SubaccountsService }): Promise<void> {
  app.get('/api/v0/subaccounts/', {
    config: { category: 'user_read' },
    schema: {
      tags: ['users'],
      summary: 'List the subaccounts of your account, with their balances',
      response: { 200: SubaccountsReply, 401: ErrorReply, 403: ErrorReply },
    },
  }, async (request) => subaccounts.list(principalOf(request)));
}
