import { Type } from 'typebox';
import type { TypedApp } from '../platform/http.js';
import { principalOf, scopeOf } from '../platform/auth.js';
import { ErrorReply, SuccessReply } from '../platform/schemas.js';
import type { InstancesModule } from './instances-module.js';
import { checkInstanceKey } from './instances-service.js';
import { listPage } from './instances-list.js';
import { CLOCK_HEADER } from './instances-events.js';
import {
  AttachSshBody, AttachSshReply, BidBody, BulkBody, BulkReply, CreateBody, CreateReply, EventsQuery, IdParams, InstanceReply, InstancesPage,
  InstancesReply, InstanceSshKeysReply, LogsBody, LogsReply, LogTokenParams, OfferParams, OkReply, SshKeyParams, UpdateBody,
  V1ListQuery, WaitQuery, WaitReply, HistoryReply,
} from './instances-schemas.js';

const tags = ['instances'];
const READ = { category: 'instance_read' } as const;
const WRITE = { category: 'instance_write' } as const;
/** Start, stop and destroy: the instance's own restricted key may call them (the service checks the id). */
const OWN_KEY = { category: 'instance_write', instanceKey: true } as const;
const errors = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply, 404: ErrorReply };

export async function instancesRoutes(app: TypedApp, instances: InstancesModule): Promise<void> {
  for (const method of ['PUT', 'POST'] as const) {
    app.route({
      method,
      url: '/api/v0/asks/:offer_id/',
      config: WRITE,
      schema: {
        tags,
        summary: 'Rent an offer: create an instance',
        description: 'An `Idempotency-Key` header makes a retry return the first reply instead of renting twice.',
        params: OfferParams,
        body: CreateBody,
        response: { 200: CreateReply, 402: ErrorReply, 409: ErrorReply, 410: ErrorReply, ...errors },
      },
      handler: async (request) => {
        const idem = request.headers['idempotency-key'];
        return instances.create(principalOf(request), request.params.offer_id, request.body ?? {}, Array.isArray(idem) ? idem[0] : idem);
      },
    });
  }

  app.get('/api/v0/instances/', {
    config: READ,
    schema: {
      tags, summary: 'List instances',
      response: { 200: InstancesReply, ...errors },
    },
  }, async (request) => {
    const all = await instances.all(principalOf(request));
    return { instances_found: all.length, instances: all };
  });

  app.get('/api/v1/instances/', {
    config: READ,
    schema: {
      tags, summary: 'List instances, filtered, ordered and paginated', querystring: V1ListQuery,
      response: {
        200: InstancesPage,
        ...errors,
      },
    },
  }, async (request) => listPage(await instances.all(principalOf(request)), request.query));

  app.get('/api/v0/instances/events/', {
    config: READ,
    schema: {
      tags, summary: 'Server-sent events: the caller\'s instance state changes',
      description: 'text/event-stream; `event: instance` frames with `{id, actual_status, intended_status, status_msg, at}`. '
        + 'Resume with `Last-Event-ID` or `since`; `max_events` and `timeout` (seconds) end the stream. '
        + 'The `X-Gpuplane-Clock` header names the service clock, `real` or `virtual` (which moves only when advanced). '
        + 'A user holds at most `GPUPLANE_EVENT_STREAMS_PER_USER` streams open at once (429 `rate_limited` past it).',
      querystring: EventsQuery,
      response: { 200: Type.String({ description: 'text/event-stream frames' }), 429: ErrorReply, ...errors },
    },
  }, async (request, reply) => {
    const principal = principalOf(request);
    const lastId = Number(request.headers['last-event-id']);
    const since = request.query.since ?? (Number.isInteger(lastId) && lastId >= 0 && request.headers['last-event-id'] ? lastId : undefined);
    // Before the reply starts: over the cap is the usual 429 error object, not a broken stream.
    const release = instances.events.admit(principal.user.id);
    let closed = false;
    request.raw.on('close', () => (closed = true));
    reply.hijack();
    reply.raw.writeHead(200, {
      'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no',
      [CLOCK_HEADER]: instances.events.clockKind,
    });
    try {
      await instances.events.stream(scopeOf(principal), { write: (c) => reply.raw.write(c), closed: () => closed || reply.raw.destroyed }, {
        since, maxEvents: request.query.max_events, timeoutS: request.query.timeout,
      });
    } catch (err) {
      request.log.error({ err }, 'instance event stream failed');
    } finally {
      release();
      reply.raw.end();
    }
  });

  app.get('/api/v0/instances/:id/', {
    config: READ,
    schema: { tags, summary: 'Show an instance', params: IdParams, response: { 200: InstanceReply, ...errors } },
  }, async (request) => instances.show(principalOf(request), request.params.id));

  app.get('/api/v0/instances/:id/history/', {
    config: READ,
    schema: {
      tags, summary: 'The instance\'s state changes so far, oldest first',
      description: 'The frames `GET /api/v0/instances/events/` sends, for this instance, from its creation on (the web console\'s status timeline).',
      params: IdParams,
      response: { 200: HistoryReply, ...errors },
    },
  }, async (request) => instances.history(principalOf(request), request.params.id));

  app.get('/api/v0/instances/:id/wait/', {
    config: READ,
    schema: {
      tags, summary: 'Answer when the instance reaches a state',
      description: '200 when `actual_status` is `until`; 409 `instance_failed` on exited/unknown/offline (for `until=stopped`, not while a '
        + 'stop waits for a host that is not reporting: it answers once the host has stopped the container); 408 `wait_timeout` after `timeout` '
        + 'seconds (its `msg` says when the service clock is virtual: then nothing happens until the clock is advanced).',
      params: IdParams, querystring: WaitQuery,
      response: { 200: WaitReply, 408: ErrorReply, 409: ErrorReply, ...errors },
    },
  }, async (request) => {
    const principal = principalOf(request);
    checkInstanceKey(principal, request.params.id);
    return instances.events.wait(scopeOf(principal), request.params.id, request.query.until ?? 'running', request.query.timeout ?? 60);
  });

  app.put('/api/v0/instances/:id/', {
    config: OWN_KEY,
    schema: {
      tags, summary: 'Stop, start or label an instance', params: IdParams, body: UpdateBody,
      response: { 200: OkReply, 402: ErrorReply, 409: ErrorReply, ...errors },
    },
  }, async (request) => instances.update(principalOf(request), request.params.id, request.body ?? {}));

  app.delete('/api/v0/instances/:id/', {
    config: OWN_KEY,
    schema: { tags, summary: 'Destroy an instance', params: IdParams, response: { 200: SuccessReply, ...errors } },
  }, async (request) => instances.destroy(principalOf(request), request.params.id));

  app.put('/api/v0/instances/', {
    config: WRITE,
    schema: { tags, summary: 'Start or stop several instances', body: BulkBody, response: { 200: BulkReply, ...errors } },
  }, async (request) => instances.bulk(principalOf(request), request.body));

  app.put('/api/v0/instances/bid_price/:id/', {
    config: WRITE,
    schema: {
      tags, summary: 'Change the bid of an interruptible instance ($/hour for the instance)', params: IdParams,
      body: BidBody,
      response: { 200: SuccessReply, ...errors },
    },
  }, async (request) => instances.changeBid(principalOf(request), request.params.id, request.body.price));

  app.put('/api/v0/instances/request_logs/:id/', {
    config: READ,
    schema: {
      tags, summary: 'Request the instance log; `result_url` serves it as text', params: IdParams, body: Type.Optional(LogsBody),
      response: { 200: LogsReply, ...errors },
    },
  }, async (request) => instances.requestLogs(principalOf(request), request.params.id, request.body ?? {}));

  app.get('/api/v0/instances/logs/:token/', {
    // The vastai client fetches result_url without a key: the unguessable, expiring token is the credential.
    config: { category: 'public' },
    schema: { tags, summary: 'An instance log (from request_logs)', params: LogTokenParams, response: { 200: Type.String(), 404: ErrorReply } },
  }, async (request, reply) => {
    const text = await instances.logText(request.params.token);
    return reply.type('text/plain; charset=utf-8').send(text);
  });

  app.post('/api/v0/instances/:id/ssh/', {
    config: WRITE,
    schema: {
      tags, summary: 'Attach an SSH public key to an instance', params: IdParams,
      body: AttachSshBody,
      response: { 200: AttachSshReply, ...errors },
    },
  }, async (request) => instances.attachSshKey(principalOf(request), request.params.id, request.body.ssh_key));

  app.get('/api/v0/instances/:id/ssh/', {
    config: READ,
    schema: {
      tags, summary: 'SSH keys attached to an instance', params: IdParams,
      response: { 200: InstanceSshKeysReply, ...errors },
    },
  }, async (request) => instances.listSshKeys(principalOf(request), request.params.id));

  app.delete('/api/v0/instances/:id/ssh/:key_id/', {
    config: WRITE,
    schema: {
      tags, summary: 'Detach an SSH key from an instance',
      params: SshKeyParams,
      response: { 200: SuccessReply, ...errors },
    },
  }, async (request) => instances.detachSshKey(principalOf(request), request.params.id, request.params.key_id));
}
