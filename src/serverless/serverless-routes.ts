import type { TypedApp } from '../platform/http.js';
import { principalOf } from '../platform/auth.js';
import { ErrorReply } from '../platform/schemas.js';
import type { ServerlessService } from './serverless-service.js';
import {
  CreateEndpointReply,
  CreateWorkergroupReply,
  DecisionsReply,
  EndpointBody,
  EndpointsReply,
  EndpointUpdateBody,
  IdParams,
  ServerlessOk,
  WorkergroupBody,
  WorkergroupsReply,
  WorkergroupUpdateBody,
} from './serverless-schemas.js';

const errors = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply, 404: ErrorReply };
const tags = ['serverless'];
const Ok = ServerlessOk;

export async function serverlessRoutes(app: TypedApp, { serverless }: { serverless: ServerlessService }): Promise<void> {
  const write = { category: 'instance_write' } as const;
  const read = { category: 'instance_read' } as const;
  // The serverless SDK calls the endpoint routes too, with `?api_key=` (serverless-sdk-routes.ts); vastai's
  // /autojobs/ are not its routes.
  const sdkWrite = { ...write, queryKey: true } as const;
  const sdkRead = { ...read, queryKey: true } as const;

  app.post('/api/v0/endptjobs/', {
    config: sdkWrite,
    schema: { summary: 'Create a serverless endpoint', tags, body: EndpointBody, response: { 200: CreateEndpointReply, ...errors } },
  }, async (request) => serverless.createEndpoint(principalOf(request), request.body));

  app.get('/api/v0/endptjobs/', {
    config: sdkRead,
    schema: { summary: 'List serverless endpoints', tags, response: { 200: EndpointsReply, ...errors } },
  }, async (request) => serverless.listEndpoints(principalOf(request)));

  app.put('/api/v0/endptjobs/:id/', {
    config: sdkWrite,
    schema: { summary: 'Update a serverless endpoint', tags, params: IdParams, body: EndpointUpdateBody, response: { 200: Ok, ...errors } },
  }, async (request) => serverless.updateEndpoint(principalOf(request), request.params.id, request.body));

  app.delete('/api/v0/endptjobs/:id/', {
    config: sdkWrite,
    schema: { summary: 'Delete a serverless endpoint; its workers are destroyed', tags, params: IdParams, response: { 200: Ok, ...errors, 409: ErrorReply } },
  }, async (request) => serverless.deleteEndpoint(principalOf(request), request.params.id));

  app.post('/api/v0/autojobs/', {
    config: write,
    schema: {
      summary: 'Create a workergroup: a template, an offer query and autoscaler settings', tags, body: WorkergroupBody,
      response: { 200: CreateWorkergroupReply, ...errors },
    },
  }, async (request) => serverless.createWorkergroup(principalOf(request), request.body));

  app.get('/api/v0/autojobs/', {
    config: read,
    schema: { summary: 'List workergroups', tags, response: { 200: WorkergroupsReply, ...errors } },
  }, async (request) => serverless.listWorkergroups(principalOf(request)));

  app.put('/api/v0/autojobs/:id/', {
    config: write,
    schema: { summary: 'Update a workergroup', tags, params: IdParams, body: WorkergroupUpdateBody, response: { 200: Ok, ...errors } },
  }, async (request) => serverless.updateWorkergroup(principalOf(request), request.params.id, request.body));

  app.delete('/api/v0/autojobs/:id/', {
    config: write,
    schema: { summary: 'Delete a workergroup; its workers are destroyed', tags, params: IdParams, response: { 200: Ok, ...errors, 409: ErrorReply } },
  }, async (request) => serverless.deleteWorkergroup(principalOf(request), request.params.id));

  app.get('/api/v0/autojobs/:id/decisions/', {
    config: read,
    schema: {
      summary: 'The autoscaler\'s decisions for a workergroup, newest first, each with its reason', tags, params: IdParams,
      response: { 200: DecisionsReply, ...errors },
    },
  }, async (request) => serverless.decisions(principalOf(request), request.params.id));
}
