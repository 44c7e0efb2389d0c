import { EMU, type TypedApp } from '../../platform/http.js';
import { ErrorReply } from '../../platform/schemas.js';
import type { TransitionsService } from './transitions-service.js';
import {
  AdvanceInstanceParams,
  AdvanceInstanceReply,
  TransitionBody,
  TransitionReply,
  TransitionsClearQuery,
  TransitionsClearReply,
  TransitionsReply,
} from './transitions-schemas.js';

const errors = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply };
const tags = ['emulator'];

/** `/_emu/transitions` and `/_emu/instances/{id}/advance` (issue 34 item 4): transitions under control. */
export async function transitionsRoutes(app: TypedApp, { transitions }: { transitions: TransitionsService }): Promise<void> {
  app.put(
    '/_emu/transitions',
    {
      config: EMU,
      schema: {
        tags,
        summary: "Time the simulated hosts' work for instances, per kind or per instance: immediate, after a delay, manual, or the seeded default",
        body: TransitionBody,
        response: { 200: TransitionReply, 404: ErrorReply, 409: ErrorReply, ...errors },
      },
    },
    async (request) => transitions.set(request.body),
  );

  app.get(
    '/_emu/transitions',
    {
      config: EMU,
      schema: { tags, summary: 'The transition rules, the slow-pull windows open now, and the seeded timing', response: { 200: TransitionsReply, ...errors } },
    },
    async () => transitions.list(),
  );

  app.delete(
    '/_emu/transitions',
    {
      config: EMU,
      schema: {
        tags,
        summary: "Remove every transition rule (or one instance's): back to the seeded timing",
        querystring: TransitionsClearQuery,
        response: { 200: TransitionsClearReply, ...errors },
      },
    },
    async (request) => transitions.clear(request.query.instance_id),
  );

  app.post(
    '/_emu/instances/:id/advance',
    {
      config: EMU,
      schema: {
        tags,
        summary: 'Move an instance to its next state now (provisioning, loading, running; a pending stop), whatever its transition rule',
        params: AdvanceInstanceParams,
        response: { 200: AdvanceInstanceReply, 404: ErrorReply, 409: ErrorReply, ...errors },
      },
    },
    async (request) => transitions.advance(request.params.id),
  );
}
