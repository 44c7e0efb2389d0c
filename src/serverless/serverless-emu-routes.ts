import { Type } from 'typebox';
import type { TypedApp } from '../app.js';
import { EMU } from '../emulator/emulator-routes.js';
import { ErrorReply } from '../platform/schemas.js';
import type { Services } from '../services.js';

/** Largest load one endpoint may be given (perf units per second). */
const MAX_LOAD = 1e9;

/** Emulator: the load on an endpoint, which the simulated autoscaler follows from its next run. */
export async function serverlessEmuRoutes(app: TypedApp, { serverless }: Services): Promise<void> {
  app.post('/_emu/endpoints/:id/load', {
    config: EMU,
    schema: {
      tags: ['emulator'], summary: 'Set the load on a serverless endpoint',
      params: Type.Object({ id: Type.Integer({ minimum: 1 }) }),
      body: Type.Object({ load: Type.Number({ minimum: 0, maximum: MAX_LOAD }) }),
      response: { 200: Type.Object({ success: Type.Boolean(), load: Type.Number() }), 400: ErrorReply, 401: ErrorReply, 403: ErrorReply, 404: ErrorReply },
    },
  }, async (request) => serverless.setLoad(request.params.id, request.body.load));
}
