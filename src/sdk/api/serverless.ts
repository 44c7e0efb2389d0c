/** Volumes (contract §3) and serverless endpoints and workergroups (spec: Create serverless endpoint; contract §3). */
import type { Static } from 'typebox';
import type { ServerlessService } from '../../serverless/serverless-service.js';
import type { VolumesService } from '../../volumes/volumes-service.js';
import type {
  CreateEndpointReply,
  CreateWorkergroupReply,
  DecisionsReply,
  EndpointBody,
  EndpointsReply,
  ServerlessOk,
  WorkergroupBody,
  WorkergroupsReply,
} from '../../serverless/serverless-schemas.js';
import type { CreateVolumeBody, CreateVolumeReply, DeleteVolumeReply, VolumeSearchReply, VolumesReply } from '../../volumes/volumes-schemas.js';
import type { Transport } from '../transport.js';
import type { OfferSearch } from './offers.js';
import type { Svc } from './types.js';

export type EndpointFields = Static<typeof EndpointBody>;
export type WorkergroupFields = Static<typeof WorkergroupBody>;
export type CreateVolume = Static<typeof CreateVolumeBody>;
/**
 * Replies whose schema lists items as open objects (`additionalProperties`): the schema's type, with the fields the
 * service puts in each item.
 */
type Open<S, R> = S & R;
type Ok = Static<typeof ServerlessOk>;

export function volumesApi(t: Transport) {
  return {
    /** Volume offers, with the offers' filter body. */
    search: (query: OfferSearch) =>
      t.request<Open<Static<typeof VolumeSearchReply>, Svc<VolumesService, 'search'>>>('POST', '/api/v0/volumes/search/', { body: query }),
    create: (body: CreateVolume) => t.request<Static<typeof CreateVolumeReply>>('PUT', '/api/v0/volumes/', { body, idempotent: true }),
    list: () => t.request<Open<Static<typeof VolumesReply>, Svc<VolumesService, 'list'>>>('GET', '/api/v0/volumes/'),
    remove: (id: number) => t.request<Static<typeof DeleteVolumeReply>>('DELETE', '/api/v0/volumes/', { query: { id }, body: {} }),
  };
}

export function serverlessApi(t: Transport) {
  return {
    createEndpoint: (body: EndpointFields) =>
      t.request<Static<typeof CreateEndpointReply>>('POST', '/api/v0/endptjobs/', { body: { client_id: 'me', ...body }, idempotent: true }),
    endpoints: () => t.request<Open<Static<typeof EndpointsReply>, Svc<ServerlessService, 'listEndpoints'>>>('GET', '/api/v0/endptjobs/'),
    updateEndpoint: (id: number, body: EndpointFields) => t.request<Ok>('PUT', `/api/v0/endptjobs/${id}/`, { body }),
    deleteEndpoint: (id: number) => t.request<Ok>('DELETE', `/api/v0/endptjobs/${id}/`, { body: {} }),
    createWorkergroup: (body: WorkergroupFields) =>
      t.request<Static<typeof CreateWorkergroupReply>>('POST', '/api/v0/autojobs/', { body, idempotent: true }),
    workergroups: () => t.request<Open<Static<typeof WorkergroupsReply>, Svc<ServerlessService, 'listWorkergroups'>>>('GET', '/api/v0/autojobs/'),
    updateWorkergroup: (id: number, body: WorkergroupFields) => t.request<Ok>('PUT', `/api/v0/autojobs/${id}/`, { body }),
    deleteWorkergroup: (id: number) => t.request<Ok>('DELETE', `/api/v0/autojobs/${id}/`, { body: {} }),
    /** The autoscaler's decisions for a workergroup, newest first, each with its reason. */
    decisions: (id: number) =>
      t.request<Open<Static<typeof DecisionsReply>, Svc<ServerlessService, 'decisions'>>>('GET', `/api/v0/autojobs/${id}/decisions/`),
  };
}
