import { EMU, type TypedApp } from '../../platform/http.js';
import { ErrorReply } from '../../platform/schemas.js';
import type { EmuSeedService } from './seed-service.js';
import { SeedBody, SeedReply } from './seed-schemas.js';

/** `POST /_emu/seed` (issue 34 item 2). Registered inside the emulator-mode branch of routes.ts. */
export async function emuSeedRoutes(app: TypedApp, { emuSeed }: { emuSeed: EmuSeedService }): Promise<void> {
  app.post(
    '/_emu/seed',
    {
      config: EMU,
      schema: {
        tags: ['emulator'],
        summary: 'Apply a seed document: users with the keys they chose, credit, templates, SSH keys, variables (kept when already there), and machines (added)',
        body: SeedBody,
        response: { 200: SeedReply, 400: ErrorReply, 401: ErrorReply, 403: ErrorReply, 409: ErrorReply },
      },
    },
    async (request) => emuSeed.seed(request.body),
  );
}
