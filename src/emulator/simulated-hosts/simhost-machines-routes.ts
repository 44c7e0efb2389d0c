import { EMU, type TypedApp } from '../../platform/http.js';
import { ErrorReply } from '../../platform/schemas.js';
import { NewMachineBody, NewMachineReply } from '../emulator-schemas.js';
import type { SimhostService } from './simhost-service.js';

/** `POST /_emu/machines` (contract §2). Registered inside the emulator-mode branch of routes.ts. */
export async function simMachinesRoutes(app: TypedApp, { simhost }: { simhost: Pick<SimhostService, 'addMachine'> }): Promise<void> {
  app.post(
    '/_emu/machines',
    {
      config: EMU,
      schema: {
        tags: ['emulator'],
        summary: 'Add a simulated machine; its offers appear in search',
        body: NewMachineBody,
        response: {
          200: NewMachineReply,
          400: ErrorReply,
          401: ErrorReply,
          403: ErrorReply,
        },
      },
    },
    async (request) => simhost.addMachine(request.body ?? {}),
  );
}
