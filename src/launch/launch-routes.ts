import type { TypedApp } from '../platform/http.js';
import { principalOf } from '../platform/auth.js';
import { ErrorReply } from '../platform/schemas.js';
import type { LaunchService } from './launch-service.js';
import { LaunchBody, LaunchReply } from './launch-schemas.js';

export async function launchRoutes(app: TypedApp, { launch }: { launch: LaunchService }): Promise<void> {
  app.put('/api/v0/launch_instance/', {
    // Vast files this under `misc`; here it rents, so it needs what renting needs (`PUT /asks/{id}/`): instance_write.
    config: { category: 'instance_write' },
    schema: {
      tags: ['instances'],
      summary: 'Search and rent in one call: the best on-demand offer `q` selects (tried best first, up to its limit)',
      body: LaunchBody,
      response: { 200: LaunchReply, 400: ErrorReply, 401: ErrorReply, 402: ErrorReply, 403: ErrorReply, 404: ErrorReply, 410: ErrorReply },
    },
  }, async (request) => launch.launch(principalOf(request), request.body));
}
