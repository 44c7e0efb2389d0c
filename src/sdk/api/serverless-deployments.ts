/** Deployments (the serverless SDK's `vastai.serverless.remote`; docs/spec/client-compat-more.md §e). */
import type { Static } from 'typebox';
import type {
  DeleteByNameBody,
  DeleteByNameReply,
  DeploymentOk,
  DeploymentPutBody,
  DeploymentPutReply,
  DeploymentReply,
  DeploymentsReply,
  DownloadUrlReply,
  VersionsReply,
} from '../../serverless/serverless-sdk-schemas.js';
import type { Transport } from '../transport.js';

export type DeploymentConfig = Static<typeof DeploymentPutBody>;
type Ok = Static<typeof DeploymentOk>;

export function deploymentsApi(t: Transport) {
  return {
    /**
     * Creates the deployment, or updates it by name and tag. With `upload_url` in the reply, POST the tarball there
     * as a multipart form (`upload_fields`, then `file`).
     */
    put: (body: DeploymentConfig) => t.request<Static<typeof DeploymentPutReply>>('PUT', '/api/v0/deployments/', { body }),
    list: () => t.request<Static<typeof DeploymentsReply>>('GET', '/api/v0/deployments/'),
    get: (id: number) => t.request<Static<typeof DeploymentReply>>('GET', `/api/v0/deployment/${id}/`),
    /** Newest first; `current` marks the one the workers run. */
    versions: (id: number) => t.request<Static<typeof VersionsReply>>('GET', `/api/v0/deployment/${id}/versions/`),
    remove: (id: number) => t.request<Ok>('DELETE', `/api/v0/deployment/${id}/`, { body: {} }),
    /** Every deployment of `name` (only `tag`'s when given). */
    removeByName: (body: Static<typeof DeleteByNameBody>) => t.request<Static<typeof DeleteByNameReply>>('DELETE', '/api/v0/deployments/', { body }),
    heartbeat: (id: number) => t.request<Ok>('POST', `/api/v0/deployment/${id}/heartbeat/`),
    /** Stops the deployment's endpoint: its workers are released, and none run until `start`. */
    stop: (id: number) => t.request<Ok>('POST', `/api/v0/deployment/${id}/stop/`, { body: {} }),
    /** Starts a stopped deployment's endpoint: the autoscaler scales it again. */
    start: (id: number) => t.request<Ok>('POST', `/api/v0/deployment/${id}/start/`, { body: {} }),
    downloadUrl: (id: number) => t.request<Static<typeof DownloadUrlReply>>('GET', `/api/v0/deployment/${id}/download_url/`),
  };
}
