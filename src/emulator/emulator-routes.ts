import { EMU, type TypedApp } from '../platform/http.js';
import { ErrorReply } from '../platform/schemas.js';
import type { EmulatorService } from './emulator-service.js';
import {
  AdvanceBody,
  EmuUserBody,
  EmuUserReply,
  FaultBody,
  FaultReply,
  NowReply,
  OutboxQuery,
  OutboxReply,
  ResetReply,
} from './emulator-schemas.js';

const errors = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply };
const tags = ['emulator'];

export async function emulatorRoutes(app: TypedApp, { emulator }: { emulator: EmulatorService }): Promise<void> {
  app.get('/_emu/clock', { config: EMU, schema: { tags, summary: 'Read the service clock', response: { 200: NowReply, ...errors } } }, async () =>
    emulator.now(),
  );

  app.post(
    '/_emu/clock/advance',
    {
      config: EMU,
      schema: {
        tags,
        summary: 'Advance a virtual clock, running everything that falls due on the way',
        body: AdvanceBody,
        response: { 200: NowReply, ...errors },
      },
    },
    async (request) => emulator.advance(request.body.seconds),
  );

  app.post(
    '/_emu/users',
    {
      config: EMU,
      schema: {
        tags,
        summary: 'Create a user with a full-access API key',
        body: EmuUserBody,
        response: { 200: EmuUserReply, 409: ErrorReply, ...errors },
      },
    },
    async (request) => emulator.createUser(request.body),
  );

  app.get(
    '/_emu/outbox',
    {
      config: EMU,
      schema: {
        tags,
        summary: 'Every e-mail and SMS the service "sent", newest last',
        querystring: OutboxQuery,
        response: {
          200: OutboxReply,
          ...errors,
        },
      },
    },
    async (request) => emulator.outbox(request.query),
  );

  app.post(
    '/_emu/faults',
    {
      config: EMU,
      schema: {
        tags,
        summary: 'Inject a fault into an instance, a machine, or the message providers',
        body: FaultBody,
        response: { 200: FaultReply, 404: ErrorReply, ...errors },
      },
    },
    async (request) => emulator.fault(request.body),
  );

  app.post(
    '/_emu/reset',
    {
      config: EMU,
      schema: { tags, summary: 'Back to a fresh, seeded state', response: { 200: ResetReply, ...errors } },
    },
    async () => emulator.reset(),
  );
}
