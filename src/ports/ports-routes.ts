/**
 * The port credential routes (design "Port access credentials"): a token per instance port, rotated by making a new
 * one, and the console's one-use grant. One service call each; who may is the service's rule (ports-service.ts).
 */
import type { TypedApp } from '../platform/http.js';
import { principalOf } from '../platform/auth.js';
import { ErrorReply } from '../platform/schemas.js';
import type { PortsService } from './ports-service.js';
import { GrantBody, GrantReply, PortParams, TokenReply } from './ports-schemas.js';

const tags = ['instances'];
const WRITE = { category: 'instance_write' } as const;
const errors = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply, 404: ErrorReply };

export async function portsRoutes(app: TypedApp, { ports }: { ports: PortsService }): Promise<void> {
  app.post('/api/v0/instances/:id/ports/:port/token/', {
    config: WRITE,
    schema: {
      tags, summary: 'Make a new token for an instance port (the old one stops working)',
      description: 'The token opens the port\'s URL (`port_urls`) for whoever holds it: in the header `x-gpuplane-port-token`, or once in the URL as `?gpuplane_token=` (which sets a cookie). It is stored hashed and shown only here.',
      params: PortParams,
      response: { 200: TokenReply, ...errors },
    },
  }, async (request) => ports.rotateToken(principalOf(request), request.params.id, request.params.port));

  app.post('/api/v0/instances/:id/ports/:port/grant/', {
    config: WRITE,
    schema: {
      tags, summary: 'A one-use link that opens an instance port in this browser',
      description: 'The web console calls it and opens the link: valid once, for 60 s, on the port\'s host, where it sets the port cookie and goes on to `path`.',
      params: PortParams,
      body: GrantBody,
      response: { 200: GrantReply, ...errors },
    },
  }, async (request) => ports.grant(principalOf(request), request.params.id, request.params.port, request.body?.path));
}
