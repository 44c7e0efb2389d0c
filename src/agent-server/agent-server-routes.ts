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
  AnswerReply, CommandAnswerBody, DesiredQuery, DesiredReply, LogAnswerBody, LogAnswerParams, LogAnswerReply, RegisterBody, RegisterReply,
  SnapshotAnswerBody, StatusBody, StatusReply,
} from '../protocol/agent-protocol-schemas.js';
import type { AgentService } from './agent-server-service.js';

const tags = ['agent'];
/** `{request}`: a request's id (log, command, snapshot), a random token (not an integer id, so not named `…_id` in the route). */
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
    // The agent hanging up ends the hold (the socket closes; a finished reply closes nothing that is still waited on).
    const hangUp = new AbortController();
    request.raw.once('close', () => hangUp.abort());
    return agent.desired(machine(request), request.query, hangUp.signal);
  });

  // Authenticated by the service with the body (an idle machine's heartbeat is one statement, key check included).
  app.put('/api/v0/agent/status/', {
    config: MACHINE,
    schema: { tags, summary: 'Heartbeat and observed state of the machine', body: StatusBody, response: { 200: StatusReply, ...errors } },
  }, async (request) => agent.report(bearerKey(request.headers.authorization), request.body));

  app.put('/api/v0/agent/logs/:request/', {
    config: MACHINE,
    preHandler: machineAuth,
    schema: {
      tags, summary: "Answer a renter's request_logs with the container's log", params: LogParams, body: LogAnswerBody,
      response: { 200: LogAnswerReply, ...errors },
    },
  }, async (request) => agent.answerLogs(machine(request), request.params.request, request.body));

  app.put('/api/v0/agent/commands/:request/', {
    config: MACHINE,
    preHandler: machineAuth,
    schema: {
      tags, summary: "Answer a renter's execute with what the command printed", params: LogParams, body: CommandAnswerBody,
      response: { 200: AnswerReply, ...errors },
    },
  }, async (request) => agent.answerCommand(machine(request), request.params.request, request.body));

  app.put('/api/v0/agent/snapshots/:request/', {
    config: MACHINE,
    preHandler: machineAuth,
    schema: {
      tags, summary: "Report how a renter's snapshot went (pushed, or why not)", params: LogParams, body: SnapshotAnswerBody,
      response: { 200: AnswerReply, ...errors },
    },
  }, async (request) => agent.answerSnapshot(machine(request), request.params.request, request.body));
}
