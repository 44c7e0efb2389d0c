/** `/_emu/events`: the emulator's host events on the service clock (issue 34 item 3; events-service.ts). */
import { EMU, type TypedApp } from '../../platform/http.js';
import { ErrorReply } from '../../platform/schemas.js';
import type { EmuEventsService } from './events-service.js';
import { EventBody, EventParams, EventReply, EventsClearedReply, EventsReply } from './events-schemas.js';

const errors = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply };
const tags = ['emulator'];

export async function emuEventsRoutes(app: TypedApp, { emuEvents }: { emuEvents: EmuEventsService }): Promise<void> {
  app.post(
    '/_emu/events',
    {
      config: EMU,
      schema: {
        tags,
        summary: 'Script a host event at a time of the service clock: an outbid wave, a host offline, a slow pull, a lost GPU',
        body: EventBody,
        response: { 200: EventReply, 404: ErrorReply, ...errors },
      },
    },
    async (request) => emuEvents.create(request.body),
  );

  app.get(
    '/_emu/events',
    { config: EMU, schema: { tags, summary: 'The scripted host events, pending, active and done', response: { 200: EventsReply, ...errors } } },
    async () => emuEvents.list(),
  );

  app.delete(
    '/_emu/events/:id',
    {
      config: EMU,
      schema: {
        tags,
        summary: 'Clear a host event: cancel it if pending, end it now if active (its hosts come back)',
        params: EventParams,
        response: { 200: EventReply, 404: ErrorReply, ...errors },
      },
    },
    async (request) => emuEvents.clear(request.params.id),
  );

  app.delete(
    '/_emu/events',
    { config: EMU, schema: { tags, summary: 'Clear every host event (active ones end now)', response: { 200: EventsClearedReply, ...errors } } },
    async () => emuEvents.clearAll(),
  );
}
