import { EMU, type TypedApp } from '../platform/http.js';
import { ErrorReply } from '../platform/schemas.js';
import type { ServerlessService } from './serverless-service.js';
import { EmuLoadBody, EmuLoadReply, IdParams } from './serverless-schemas.js';

/** Emulator: the load on an endpoint, which the simulated autoscaler follows from its next run. */
export async function serverlessEmuRoutes(app: TypedApp, { serverless }: { serverless: ServerlessService }): Promise<void> {
  app.post('/_emu/endpoints/:id/load', {
    config: EMU,
    schema: {
      tags: ['emulator'], summary: 'Set the load on a serverless endpoint',
      params: IdParams,
      body: EmuLoadBody,
      response: { 200: EmuLoadReply, 400: ErrorReply, 401: ErrorReply, 403: ErrorReply, 404: ErrorReply },
    },
  }, async (request) => serverless.setLoad(request.params.id, request.body.load));
}
