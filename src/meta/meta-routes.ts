import type { TypedApp } from '../platform/http.js';
import { GpuNamesReply } from './meta-schemas.js';

export async function metaRoutes(app: TypedApp, { fleetNames }: { fleetNames: () => Promise<string[]> }): Promise<void> {
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
