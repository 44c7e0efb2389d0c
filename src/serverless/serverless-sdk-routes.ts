/**
 * The serverless SDK's routes (docs/spec/client-compat-more.md §e): workergroups at `/api/v0/workergroups/` (the same
 * records as vastai's `/autojobs/`), one endpoint by id, deployments and their versions, and the autoscaler's routing
 * call `POST /route/` with its public key `GET /pubkey/`. The SDK adds `?api_key=` to every request: these routes
 * take the key from there when no Authorization header is sent (`queryKey`).
 */
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { bearerKey, principalOf, queryApiKey } from '../platform/auth.js';
import type { TypedApp } from '../platform/http.js';
import { ErrorReply } from '../platform/schemas.js';
import type { ServerlessService } from './serverless-service.js';
import type { EndpointRow } from './serverless-store.js';
import { CreateWorkergroupReply, EndpointReply, IdParams, ServerlessOk, WorkergroupSdkBody, WorkergroupsReply } from './serverless-schemas.js';
import {
  DeleteByNameBody,
  DeleteByNameReply,
  DeploymentOk,
  DeploymentPutBody,
  DeploymentPutReply,
  DeploymentReply,
  DeploymentsReply,
  DownloadUrlReply,
  EmptyBody,
  PubkeyReply,
  RouteBody,
  RouteQuery,
  RouteReply,
  VersionsReply,
} from './serverless-sdk-schemas.js';

const errors = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply, 404: ErrorReply };
const tags = ['serverless'];
const write = { category: 'instance_write', queryKey: true } as const;
const read = { category: 'instance_read', queryKey: true } as const;
/** A deployment change that needs the blob store answers 503 without one. */
const unavailable = { 503: ErrorReply };

/** `POST /update_workers/` (the SDK after a deployment's soft_update; `cancel_update` has nothing to cancel). */
const UpdateWorkersBody = Type.Object(
  { workergroup_id: Type.Integer({ minimum: 1, maximum: 2_147_483_647 }), api_key: Type.Optional(Type.String({ maxLength: 512 })), cancel_update: Type.Optional(Type.Boolean()) },
  { additionalProperties: false },
);

export async function serverlessSdkRoutes(app: TypedApp, { serverless }: { serverless: ServerlessService }): Promise<void> {
  const deployments = serverless.deployments;

  app.get('/api/v0/endptjobs/:id/', {
    config: read,
    schema: { summary: 'One serverless endpoint, with its own api_key', tags, params: IdParams, response: { 200: EndpointReply, ...errors } },
  }, async (request) => serverless.getEndpoint(principalOf(request), request.params.id));

  app.post('/api/v0/workergroups/', {
    config: write,
    schema: {
      summary: 'Create a workergroup (the serverless SDK\'s name for /autojobs/; search_params may be a filter object)', tags,
      body: WorkergroupSdkBody, response: { 200: CreateWorkergroupReply, ...errors },
    },
  }, async (request) => serverless.createWorkergroup(principalOf(request), request.body));

  app.get('/api/v0/workergroups/', {
    config: read,
    schema: { summary: 'List workergroups (the same records as /autojobs/)', tags, response: { 200: WorkergroupsReply, ...errors } },
  }, async (request) => serverless.listWorkergroups(principalOf(request)));

  app.delete('/api/v0/workergroups/:id/', {
    config: write,
    schema: { summary: 'Delete a workergroup; its workers are destroyed', tags, params: IdParams, response: { 200: ServerlessOk, ...errors, 409: ErrorReply } },
  }, async (request) => serverless.deleteWorkergroup(principalOf(request), request.params.id));

  app.put('/api/v0/deployments/', {
    config: write,
    schema: {
      summary: 'Create or update a deployment by name and tag; a new tarball comes back as an upload form (needs GPUPLANE_BLOB_STORE_URL)', tags,
      body: DeploymentPutBody, response: { 200: DeploymentPutReply, ...errors, 409: ErrorReply, ...unavailable },
    },
  }, async (request) => deployments.put(principalOf(request), request.body));

  app.get('/api/v0/deployments/', {
    config: read,
    schema: { summary: 'List deployments', tags, response: { 200: DeploymentsReply, ...errors } },
  }, async (request) => deployments.list(principalOf(request)));

  app.delete('/api/v0/deployments/', {
    config: write,
    schema: { summary: 'Delete the deployments of a name (every tag unless one is given)', tags, body: DeleteByNameBody, response: { 200: DeleteByNameReply, ...errors } },
  }, async (request) => deployments.removeByName(principalOf(request), request.body));

  app.get('/api/v0/deployment/:id/', {
    config: read,
    schema: { summary: 'One deployment', tags, params: IdParams, response: { 200: DeploymentReply, ...errors } },
  }, async (request) => deployments.get(principalOf(request), request.params.id));

  app.delete('/api/v0/deployment/:id/', {
    config: write,
    schema: { summary: 'Delete a deployment, its endpoint and workergroup; the workers are destroyed', tags, params: IdParams, response: { 200: DeploymentOk, ...errors } },
  }, async (request) => deployments.remove(principalOf(request), request.params.id));

  app.get('/api/v0/deployment/:id/versions/', {
    config: read,
    schema: { summary: 'A deployment\'s versions, newest first', tags, params: IdParams, response: { 200: VersionsReply, ...errors } },
  }, async (request) => deployments.versions(principalOf(request), request.params.id));

  for (const [verb, state] of [['stop', 'stopped'], ['start', 'active']] as const) {
    app.post(`/api/v0/deployment/:id/${verb}/`, {
      config: write,
      schema: {
        summary: verb === 'stop' ? "Stop a deployment's endpoint: its workers are released and none are kept until it starts" : "Start a stopped deployment's endpoint again",
        tags, params: IdParams, body: Type.Optional(EmptyBody), response: { 200: DeploymentOk, ...errors },
      },
    }, async (request) => deployments.setState(principalOf(request), request.params.id, state));
  }

  app.post('/api/v0/deployment/:id/heartbeat/', {
    config: write,
    schema: { summary: 'The client holding a deployment with a ttl is still there', tags, params: IdParams, response: { 200: DeploymentOk, ...errors } },
  }, async (request) => deployments.heartbeat(principalOf(request), request.params.id));

  app.get('/api/v0/deployment/:id/download_url/', {
    config: { ...read, instanceKey: true },
    schema: {
      summary: 'Where a worker downloads the deployment\'s tarball (its instance key may ask; needs GPUPLANE_BLOB_STORE_URL)', tags, params: IdParams,
      response: { 200: DownloadUrlReply, ...errors, ...unavailable },
    },
  }, async (request) => deployments.downloadUrl(principalOf(request), request.params.id));

  app.post('/update_workers/', {
    config: write,
    schema: {
      summary: 'Replace a workergroup\'s workers with its current version (the serverless SDK after a deployment\'s soft_update)', tags,
      body: UpdateWorkersBody, response: { 200: ServerlessOk, ...errors },
    },
  }, async (request) => deployments.updateWorkers(principalOf(request), request.body.workergroup_id));

  // Authenticated by the route itself, with the endpoint's own key (not an account key), once the body is checked
  // (as the agent's machine-key routes do).
  const endpointOf = new WeakMap<FastifyRequest, EndpointRow>();
  app.post('/route/', {
    config: { category: 'public', customAuth: true },
    preHandler: async (request: FastifyRequest) => {
      const bodyKey = (request.body as { api_key?: string | null }).api_key;
      const key = bearerKey(request.headers.authorization) ?? queryApiKey(request.query) ?? (bodyKey || null);
      endpointOf.set(request, await serverless.router.authenticate(key));
    },
    schema: {
      summary: 'Route a request to a ready worker of an endpoint: its address, signed (key at /pubkey/); without one, a reply with no url to poll again',
      description: 'Authenticated with the endpoint\'s api_key: as Bearer, else ?api_key=, else the body\'s api_key.',
      tags, body: RouteBody, querystring: RouteQuery, response: { 200: RouteReply, ...errors },
    },
  }, async (request) => serverless.router.route(endpointOf.get(request)!, request.body));

  app.get('/pubkey/', {
    config: { category: 'public' },
    schema: { summary: 'The router\'s public key (PEM): workers verify the signature of POST /route/ replies with it', tags, response: { 200: PubkeyReply } },
  }, async (_request, reply) => reply.type('text/plain').send(await serverless.publicKey()));
}
