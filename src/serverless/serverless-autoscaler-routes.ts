/**
 * The autoscaler's routes the clients post at the root of its base URL (docs/spec/client-compat-more.md §e, "Related
 * autoscaler routes"): `vastai get endpt-workers` / the serverless SDK's `get_endpoint_workers`, `vastai get
 * endpt-logs`, `vastai get wrkgrp-logs`. The account key comes as Bearer, `?api_key=`, or the body's `api_key` (the
 * serverless SDK sends no header here).
 */
import { principalOf } from '../platform/auth.js';
import type { TypedApp } from '../platform/http.js';
import { ErrorReply } from '../platform/schemas.js';
import type { ServerlessService } from './serverless-service.js';
import { AutoscalerIdBody, EndpointLogsReply, EndpointWorkersReply } from './serverless-sdk-schemas.js';
import { DeleteRequestsBody, WorkerReportReply, WorkerStatusBody } from './serverless-worker-schemas.js';

const tags = ['serverless'];
const errors = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply, 404: ErrorReply };
const read = { category: 'instance_read', queryKey: true, bodyKey: true } as const;

export async function serverlessAutoscalerRoutes(app: TypedApp, { serverless }: { serverless: ServerlessService }): Promise<void> {
  app.post('/get_endpoint_workers/', {
    config: read,
    schema: { summary: "An endpoint's workers (the instances of its workergroups), as the serverless SDK's Worker reads them", tags, body: AutoscalerIdBody, response: { 200: EndpointWorkersReply, ...errors } },
  }, async (request) => serverless.insight.endpointWorkers(principalOf(request), request.body.id));

  app.post('/get_endpoint_logs/', {
    config: read,
    schema: { summary: "The autoscaler's log of an endpoint: its workergroups' decisions, oldest first, at four levels", tags, body: AutoscalerIdBody, response: { 200: EndpointLogsReply, ...errors } },
  }, async (request) => serverless.insight.endpointLogs(principalOf(request), request.body.id, request.body.tail ?? undefined));

  app.post('/get_autogroup_logs/', {
    config: read,
    schema: { summary: "The autoscaler's log of a workergroup: its decisions, oldest first, at four levels", tags, body: AutoscalerIdBody, response: { 200: EndpointLogsReply, ...errors } },
  }, async (request) => serverless.insight.workergroupLogs(principalOf(request), request.body.id, request.body.tail ?? undefined));

  // The client's own worker's reports (serverless-workers.ts), at the root of its REPORT_ADDR. Authenticated by the
  // service with the worker's id and MASTER_TOKEN from the body (the pyworker sends no header); no account key.
  const worker = { category: 'public' } as const;
  const workerErrors = { 400: ErrorReply, 401: ErrorReply };
  app.post('/worker_status/', {
    config: worker,
    schema: {
      summary: 'A serverless worker\'s report (the pyworker\'s WorkerStatusData): loaded, errored, its load; its MASTER_TOKEN authenticates it',
      tags, body: WorkerStatusBody, response: { 200: WorkerReportReply, ...workerErrors },
    },
  }, async (request) => serverless.workers.workerStatus(request.body));

  app.post('/delete_requests/', {
    config: worker,
    schema: {
      summary: 'A serverless worker\'s finished requests, acknowledged (the router keeps no queue of them)',
      tags, body: DeleteRequestsBody, response: { 200: WorkerReportReply, ...workerErrors },
    },
  }, async (request) => serverless.workers.deleteRequests(request.body));
}
