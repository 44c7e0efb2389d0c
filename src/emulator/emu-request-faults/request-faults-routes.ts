import { EMU, type TypedApp } from '../../platform/http.js';
import { ErrorReply } from '../../platform/schemas.js';
import { requestFaultsFor, type RequestFaultsDeps } from './request-faults-hook.js';
import {
  RequestFaultBody,
  RequestFaultParams,
  RequestFaultReply,
  RequestFaultsClearReply,
  RequestFaultsReply,
} from './request-faults-schemas.js';

const errors = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply };
const tags = ['emulator'];

/** `/_emu/request-faults` (issue 34 item 3): faults by API operation, added, listed and cleared. */
export async function requestFaultsRoutes(app: TypedApp, services: RequestFaultsDeps): Promise<void> {
  const faults = requestFaultsFor(services);

  app.post(
    '/_emu/request-faults',
    {
      config: EMU,
      schema: {
        tags,
        summary: 'Fault API requests by route, method or permission category: a status (429 with Retry-After, 5xx), latency, or a timeout',
        body: RequestFaultBody,
        response: { 200: RequestFaultReply, ...errors },
      },
    },
    async (request) => faults.add(request.body),
  );

  app.get(
    '/_emu/request-faults',
    { config: EMU, schema: { tags, summary: 'The request fault rules, with how often each matched and fired', response: { 200: RequestFaultsReply, ...errors } } },
    async () => faults.list(),
  );

  app.delete(
    '/_emu/request-faults/:id',
    {
      config: EMU,
      schema: { tags, summary: 'Remove one request fault rule', params: RequestFaultParams, response: { 200: RequestFaultsClearReply, 404: ErrorReply, ...errors } },
    },
    async (request) => faults.remove(request.params.id),
  );

  app.delete(
    '/_emu/request-faults',
    { config: EMU, schema: { tags, summary: 'Remove every request fault rule', response: { 200: RequestFaultsClearReply, ...errors } } },
    async () => faults.clear(),
  );
}
