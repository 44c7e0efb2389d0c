/** Cloud storage connections (`GET /api/v0/users/cloud_integrations/`). */
import type { Static } from 'typebox';
import type { CloudConnectionsReply } from '../../cloud/cloud-routes.js';
import type { Transport } from '../transport.js';

export type CloudConnection = Static<typeof CloudConnectionsReply>[number];

export function cloudApi(t: Transport) {
  return {
    connections: () => t.request<CloudConnection[]>('GET', '/api/v0/users/cloud_integrations/'),
  };
}
