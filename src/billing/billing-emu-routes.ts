import { EMU, type TypedApp } from '../platform/http.js';
import { toMicro } from '../platform/money.js';
import { ErrorReply } from '../platform/schemas.js';
import type { BillingService } from './billing-service.js';
import { EmuCreditBody, EmuCreditReply } from './billing-schemas.js';

/** Emulator control of billing: add credit to a user (a negative amount removes it, to test a running-out balance). */
export async function billingEmuRoutes(app: TypedApp, { billing }: { billing: BillingService }): Promise<void> {
  app.post(
    '/_emu/credit',
    {
      config: EMU,
      schema: {
        tags: ['emulator'],
        summary: 'Add credit (dollars) to a user',
        body: EmuCreditBody,
        response: {
          200: EmuCreditReply,
          400: ErrorReply,
          401: ErrorReply,
          403: ErrorReply,
          404: ErrorReply,
        },
      },
    },
    async (request) => billing.addCreditTo(request.body, toMicro(request.body.amount)),
  );
}
