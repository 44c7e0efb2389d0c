import type { TypedApp } from '../app.js';
import type { Services } from '../services.js';
import { GpuNamesReply } from './meta-schemas.js';

export async function metaRoutes(app: TypedApp, { fleetNames }: Services): Promise<void> {
  app.get(
    '/api/v0/gpu_names/unique/',
    {
      config: { category: 'public' },
      schema: {
        summary: 'GPU model names in the fleet (no key needed; the vastai client calls it at start-up)',
        tags: ['offers'],
        response: { 200: GpuNamesReply },
      },
    },
    async () => ({ gpu_names: await fleetNames() }),
  );
}
