/**
 * The agent protocol's routes (docs/AGENT-PROTOCOL.md). Registration takes the host's API key (`machine_write`);
 * every `/api/v0/agent/` route takes a machine key instead, checked here: no path names a machine, so an agent can
 * reach only its own. The key is checked after the request is validated (preHandler), as every route's body and
 * params are checked against their schemas first: a malformed request is a 400 whoever sends it.
 */
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { TypedApp } from '../platform/http.js';
import { bearerKey, principalOf } from '../platform/auth.js';
import { ErrorReply } from '../platform/schemas.js';
import {
  DesiredQuery, DesiredReply, LogAnswerBody, LogAnswerParams, LogAnswerReply, RegisterBody, RegisterReply, StatusBody, StatusReply,
} from '../fleet/agent-protocol-schemas.js';
import type { AgentService } from './agent-service.js';

const tags = ['agent'];
/** `{request}`: the log request's id, a random token (not an integer id, so not named `…_id` in the route). */
const LogParams = Type.Object({ request: LogAnswerParams.properties.request_id });
const errors = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply, 404: ErrorReply };
/** Machine-key routes: no API key (the route authenticates the machine key itself). */
const MACHINE = { category: 'public' as const, customAuth: true };

export async function agentRoutes(app: TypedApp, agent: AgentService): Promise<void> {
  const machineOf = new WeakMap<FastifyRequest, number>();
  const machineAuth = async (request: FastifyRequest) => {
    machineOf.set(request, await agent.authenticate(bearerKey(request.headers.authorization)));
  };
  const machine = (request: FastifyRequest) => machineOf.get(request)!;

  app.post('/api/v0/machines/register/', {
    config: { category: 'machine_write' },
    schema: { tags, summary: 'Register a machine run by `gpuplane agent` (its key is shown once)', body: RegisterBody, response: { 200: RegisterReply, ...errors } },
  }, async (request) => agent.register(principalOf(request), request.body));

  app.get('/api/v0/agent/desired/', {
    config: MACHINE,
    preHandler: machineAuth,
    schema: { tags, summary: "The machine's desired state (long-poll)", querystring: DesiredQuery, response: { 200: DesiredReply, ...errors } },
  }, async (request) => {
    let gone = false;
    request.raw.once('close', () => (gone = true));
    return agent.desired(machine(request), request.query, () => gone);
  });

  app.put('/api/v0/agent/status/', {
    config: MACHINE,
    preHandler: machineAuth,
    schema: { tags, summary: 'Heartbeat and observed state of the machine', body: StatusBody, response: { 200: StatusReply, ...errors } },
  }, async (request) => agent.status(machine(request), request.body));

  app.put('/api/v0/agent/logs/:request/', {
    config: MACHINE,
    preHandler: machineAuth,
    schema: {
      tags, summary: "Answer a renter's request_logs with the container's log", params: LogParams, body: LogAnswerBody,
      response: { 200: LogAnswerReply, ...errors },
    },
  }, async (request) => agent.answerLogs(machine(request), request.params.request, request.body));
}

/** Body of `PUT /api/v0/machines/create_asks/` (client-compat-more.md); every key may be null. */
const N = <T extends ReturnType<typeof Type.Number>>(t: T) => Type.Optional(Type.Union([t, Type.Null()]));
export const CreateAsksBody = Type.Object({
  machine: Type.Integer({ minimum: 1, maximum: 2_147_483_647 }),
  price_gpu: N(Type.Number({ minimum: 0, maximum: 1000 })),
  price_disk: N(Type.Number({ minimum: 0, maximum: 1000 })),
  price_inetu: N(Type.Number({ minimum: 0, maximum: 1000 })),
  price_inetd: N(Type.Number({ minimum: 0, maximum: 1000 })),
  price_min_bid: N(Type.Number({ minimum: 0, maximum: 1000 })),
  end_date: N(Type.Number({ minimum: 0, maximum: 1e11 })),
}, { additionalProperties: true });

/**
 * STOPGAP listing route for real hosts' machines, until the host API (branch i13-host) brings the full
 * `PUT /api/v0/machines/create_asks/`: drop this function (and its line in routes.ts) when that merges.
 */
export async function agentListingStopgapRoutes(app: TypedApp, agent: AgentService): Promise<void> {
  app.put('/api/v0/machines/create_asks/', {
    config: { category: 'machine_write' },
    schema: { tags, summary: 'List a machine for rent (prices, end date)', body: CreateAsksBody, response: { 200: Type.Object({ success: Type.Boolean(), msg: Type.String() }), ...errors } },
  }, async (request) => agent.list(principalOf(request), request.body));
}
