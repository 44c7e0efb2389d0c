import { Type } from 'typebox';
import type { TypedApp } from '../app.js';
import { EMU } from '../emulator/emulator-routes.js';
import { toMicro } from '../platform/money.js';
import { ErrorReply } from '../platform/schemas.js';
import type { Services } from '../services.js';

/** Largest credit change one call may make, in dollars. */
const MAX_CREDIT_CHANGE = 1e9;

/** Emulator control of billing: add credit to a user (a negative amount removes it, to test a running-out balance). */
export async function billingEmuRoutes(app: TypedApp, { billing }: Services): Promise<void> {
  app.post(
    '/_emu/credit',
    {
      config: EMU,
      schema: {
        tags: ['emulator'],
        summary: 'Add credit (dollars) to a user',
        body: Type.Object({
          user_id: Type.Integer({ minimum: 1 }),
          amount: Type.Number({ minimum: -MAX_CREDIT_CHANGE, maximum: MAX_CREDIT_CHANGE }),
        }),
        response: {
          200: Type.Object({ success: Type.Boolean(), credit: Type.Number({ description: 'balance after the change, dollars' }) }),
          400: ErrorReply,
          401: ErrorReply,
          403: ErrorReply,
          404: ErrorReply,
        },
      },
    },
    async (request) => billing.addCredit(request.body.user_id, toMicro(request.body.amount)),
  );
}
