/** Volumes (contract §3) and serverless endpoints and workergroups (spec: Create serverless endpoint; contract §3). */
import type { Static } from 'typebox';
import type {
  CreateEndpointReply,
  CreateWorkergroupReply,
  DecisionsReply,
  EndpointBody,
  EndpointReply,
  EndpointsReply,
  ServerlessOk,
  WorkergroupBody,
  WorkergroupSdkBody,
  WorkergroupsReply,
} from '../../serverless/serverless-schemas.js';
import type { EndpointLogsReply, EndpointWorkersReply, RouteBody, RouteReply } from '../../serverless/serverless-sdk-schemas.js';
import type { CreateVolumeBody, CreateVolumeReply, DeleteVolumeReply, UnlistVolumeReply, VolumeSearchReply, VolumesReply } from '../../volumes/volumes-schemas.js';
import type { CopyVolumeBody } from '../../network/network-schemas.js';
import type { Transport } from '../transport.js';
import type { OfferSearch } from './offers.js';

export type EndpointFields = Static<typeof EndpointBody>;
export type WorkergroupFields = Static<typeof WorkergroupBody>;
/** A workergroup as the serverless SDK makes it: `search_params` may also be an offer filter object. */
export type WorkergroupSdkFields = Static<typeof WorkergroupSdkBody>;
export type RouteRequest = Static<typeof RouteBody>;
export type CreateVolume = Static<typeof CreateVolumeBody>;
type Ok = Static<typeof ServerlessOk>;

export function volumesApi(t: Transport) {
  return {
    /** Volume offers, with the offers' filter body. */
    search: (query: OfferSearch) =>
      t.request<Static<typeof VolumeSearchReply>>('POST', '/api/v0/volumes/search/', { body: query }),
    create: (body: CreateVolume) => t.request<Static<typeof CreateVolumeReply>>('PUT', '/api/v0/volumes/', { body, idempotent: true }),
    list: () => t.request<Static<typeof VolumesReply>>('GET', '/api/v0/volumes/'),
    remove: (id: number) => t.request<Static<typeof DeleteVolumeReply>>('DELETE', '/api/v0/volumes/', { query: { id }, body: {} }),
    /** The host side: stop offering your machine's disk as volumes (`id`: its volume offer). */
    unlist: (offerId: number) => t.request<Static<typeof UnlistVolumeReply>>('POST', '/api/v0/volumes/unlist', { body: { id: offerId } }),
    /** Copy a volume into a new one from a volume offer: this server answers 503 (no host-to-host transfer). */
    copy: (body: Static<typeof CopyVolumeBody>) => t.request<{ success: boolean; msg: string }>('POST', '/api/v0/volumes/copy/', { body }),
  };
}

export function serverlessApi(t: Transport) {
  return {
    createEndpoint: (body: EndpointFields) =>
      t.request<Static<typeof CreateEndpointReply>>('POST', '/api/v0/endptjobs/', { body: { client_id: 'me', ...body }, idempotent: true }),
    endpoints: () => t.request<Static<typeof EndpointsReply>>('GET', '/api/v0/endptjobs/'),
    /** One endpoint, with its own `api_key` (what `route` needs). */
    endpoint: (id: number) => t.request<Static<typeof EndpointReply>>('GET', `/api/v0/endptjobs/${id}/`),
    updateEndpoint: (id: number, body: EndpointFields) => t.request<Ok>('PUT', `/api/v0/endptjobs/${id}/`, { body }),
    deleteEndpoint: (id: number) => t.request<Ok>('DELETE', `/api/v0/endptjobs/${id}/`, { body: {} }),
    createWorkergroup: (body: WorkergroupFields) =>
      t.request<Static<typeof CreateWorkergroupReply>>('POST', '/api/v0/autojobs/', { body, idempotent: true }),
    workergroups: () => t.request<Static<typeof WorkergroupsReply>>('GET', '/api/v0/autojobs/'),
    updateWorkergroup: (id: number, body: WorkergroupFields) => t.request<Ok>('PUT', `/api/v0/autojobs/${id}/`, { body }),
    deleteWorkergroup: (id: number) => t.request<Ok>('DELETE', `/api/v0/autojobs/${id}/`, { body: {} }),
    /** `POST /workergroups/`, the serverless SDK's form of createWorkergroup. */
    addWorkergroup: (body: WorkergroupSdkFields) =>
      t.request<Static<typeof CreateWorkergroupReply>>('POST', '/api/v0/workergroups/', { body, idempotent: true }),
    /** Workergroups at `/workergroups/` (the same records as `workergroups()`). */
    listWorkergroups: () => t.request<Static<typeof WorkergroupsReply>>('GET', '/api/v0/workergroups/'),
    removeWorkergroup: (id: number) => t.request<Ok>('DELETE', `/api/v0/workergroups/${id}/`),
    /**
     * A ready worker of an endpoint, or a reply without `url` to call again with its `request_idx`. The client's key
     * must be the endpoint's own `api_key` (from `endpoint(id)`): make a client with it for this call.
     */
    route: (body: RouteRequest) => t.request<Static<typeof RouteReply>>('POST', '/route/', { body }),
    /** The PEM public key workers verify `route` signatures with. */
    publicKey: () => t.request<string>('GET', '/pubkey/'),
    /** Replaces a workergroup's workers with its current version (after a deployment's soft_update). */
    updateWorkers: (workergroupId: number) => t.request<Ok>('POST', '/update_workers/', { body: { workergroup_id: workergroupId } }),
    /** The autoscaler's decisions for a workergroup, newest first, each with its reason. */
    decisions: (id: number) =>
      t.request<Static<typeof DecisionsReply>>('GET', `/api/v0/autojobs/${id}/decisions/`),
    /** An endpoint's workers (the instances of its workergroups), as the serverless SDK's Worker. */
    endpointWorkers: (endpointId: number) =>
      t.request<Static<typeof EndpointWorkersReply>>('POST', '/get_endpoint_workers/', { body: { id: endpointId } }),
    /** The autoscaler's log of an endpoint (all its workergroups), oldest first; `tail`: the newest lines only. */
    endpointLogs: (endpointId: number, tail?: number) =>
      t.request<Static<typeof EndpointLogsReply>>('POST', '/get_endpoint_logs/', { body: { id: endpointId, ...(tail ? { tail } : {}) } }),
    /** The autoscaler's log of one workergroup, oldest first. */
    workergroupLogs: (workergroupId: number, tail?: number) =>
      t.request<Static<typeof EndpointLogsReply>>('POST', '/get_autogroup_logs/', { body: { id: workergroupId, ...(tail ? { tail } : {}) } }),
  };
}
