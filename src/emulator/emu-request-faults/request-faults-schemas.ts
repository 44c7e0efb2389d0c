/**
 * TypeBox schemas of `/_emu/request-faults` (issue 34 item 3: faults by API operation), exported so the SDK takes its
 * types from what the server validates.
 */
import { Type } from 'typebox';
import { Id } from '../../platform/schemas.js';

/** The statuses a rule may answer with: Vast.ai's rate limit and the 5xx its proxies send. */
export const FAULT_STATUSES = [429, 500, 502, 503, 504] as const;
export const FAULT_METHODS = ['GET', 'POST', 'PUT', 'DELETE', '*'] as const;
/** Longest added latency (and the longest a timeout waits before dropping the connection). */
export const MAX_LATENCY_MS = 60_000;
/** How long a timeout rule without latency_ms keeps the request before dropping the connection. */
export const DEFAULT_TIMEOUT_MS = 30_000;
const MAX_SEED = 2 ** 32 - 1;

export const RequestFaultBody = Type.Object({
  method: Type.Optional(Type.Union([Type.Literal('GET'), Type.Literal('POST'), Type.Literal('PUT'), Type.Literal('DELETE'), Type.Literal('*')], { default: '*', description: 'the HTTP method; * any' })),
  route: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 300,
      description: 'a route path as the API reference shows it, e.g. /api/v0/instances/{id}/; * at the end: a prefix; * alone: every request',
    }),
  ),
  category: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: "a permission category (the route's x-permission-category)" })),
  probability: Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: 'chance a matched request is faulted (default 1)' })),
  status: Type.Optional(Type.Union([Type.Literal(429), Type.Literal(500), Type.Literal(502), Type.Literal(503), Type.Literal(504)], { description: 'the status to answer with (default 429)' })),
  retry_after: Type.Optional(Type.Integer({ minimum: 0, maximum: 86_400, description: '429 only: the Retry-After header, seconds (default 1)' })),
  latency_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_LATENCY_MS, description: 'added before answering; without status: latency only' })),
  timeout: Type.Optional(Type.Boolean({ description: 'no answer: the connection is dropped after latency_ms (default 30 s)' })),
  count: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'how many times at most' })),
  seed: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_SEED, description: "the draw's seed (default: GPUPLANE_SEED)" })),
}, { additionalProperties: false });

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

export const RequestFault = Type.Object({
  id: Type.Integer(),
  method: Type.String(),
  route: Nullable(Type.String()),
  category: Nullable(Type.String()),
  probability: Type.Number(),
  status: Nullable(Type.Integer({ description: 'null: latency only, or a timeout' })),
  retry_after: Nullable(Type.Integer()),
  latency_ms: Type.Integer(),
  timeout: Type.Boolean(),
  count: Nullable(Type.Integer({ description: 'null: no limit' })),
  seed: Nullable(Type.Integer()),
  matched: Type.Integer({ description: 'requests the rule matched so far' }),
  fired: Type.Integer({ description: 'times it faulted a request' }),
  created_at: Type.Number(),
});

export const RequestFaultReply = Type.Object({ success: Type.Literal(true), fault: RequestFault });
export const RequestFaultsReply = Type.Object({ faults: Type.Array(RequestFault) });
export const RequestFaultParams = Type.Object({ id: Id() });
export const RequestFaultsClearReply = Type.Object({ success: Type.Literal(true), removed: Type.Integer() });
