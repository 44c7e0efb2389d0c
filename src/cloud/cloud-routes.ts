import { Type } from 'typebox';
import type { TypedApp } from '../platform/http.js';
import { ErrorReply } from '../platform/schemas.js';

/** `vastai show connections` needs a bare list of `{id, name, cloud_type}` (client-compat-more §b). */
export const CloudConnectionsReply = Type.Array(Type.Object({ id: Type.Integer(), name: Type.String(), cloud_type: Type.String() }));

/**
 * Cloud connections (Drive, S3, B2, Dropbox, Hugging Face) are made through a provider's sign-in (OAuth) or stored
 * provider keys, which no gpuplane route or client command creates yet: every account has none, and the list says so.
 * When creating them lands, this list reads them from their store.
 */
export async function cloudRoutes(app: TypedApp): Promise<void> {
  app.get(
    '/api/v0/users/cloud_integrations/',
    {
      config: { category: 'user_read' },
      schema: { summary: 'Your cloud storage connections (none can be made yet)', tags: ['account'], response: { 200: CloudConnectionsReply, 401: ErrorReply, 403: ErrorReply } },
    },
    async () => [],
  );
}
