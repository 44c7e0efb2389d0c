/** Issue 34 (state): `GET /_emu/state` saves the whole emulated world, `PUT /_emu/state` loads one (emulator mode). */
import { EMU, type TypedApp } from '../../platform/http.js';
import { ErrorReply } from '../../platform/schemas.js';
import type { EmuStateService } from './emu-state-service.js';
import { STATE_BODY_LIMIT, StateDocument, StateLoaded } from './emu-state-schemas.js';

const errors = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply };
const tags = ['emulator'];

export async function emuStateRoutes(app: TypedApp, { emuState }: { emuState: EmuStateService }): Promise<void> {
  app.get(
    '/_emu/state',
    {
      config: EMU,
      schema: {
        tags,
        summary: 'Save the whole emulated world (every table, the id counters, the clock) as one JSON document',
        response: { 200: StateDocument, ...errors },
      },
    },
    async () => emuState.save(),
  );

  app.put(
    '/_emu/state',
    {
      config: EMU,
      bodyLimit: STATE_BODY_LIMIT,
      schema: {
        tags,
        summary: 'Replace the whole emulated world with a saved one (same ids, keys, instances, charges and clock)',
        body: StateDocument,
        response: { 200: StateLoaded, 409: ErrorReply, 413: ErrorReply, ...errors },
      },
    },
    async (request) => emuState.load(request.body, { callerKeyHash: request.principal?.key.key_hash }),
  );
}
