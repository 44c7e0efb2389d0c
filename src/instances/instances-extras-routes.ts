/**
 * Instance extras (docs/spec/client-compat-more.md §c): reboot, recycle, update, execute and its output, take
 * snapshot, and cloud copy. Copying between instances and local machines is the copy feature's (src/copy/). Cloud
 * copy needs what gpuplane does not have (docs/spec/client-compat-more.md, last section): its routes answer 503
 * `service_unavailable` saying what is missing, in the error shape the clients print (`msg`), never a 404 or a
 * success that copies nothing.
 */
import { Type } from 'typebox';
import type { TypedApp } from '../platform/http.js';
import { principalOf } from '../platform/auth.js';
import { ApiError } from '../platform/errors.js';
import { ErrorReply } from '../platform/schemas.js';
import type { InstancesModule } from './instances-module.js';
import { IdParams } from './instances-schemas.js';
import {
  ActionReply, CancelCopyBody, CloudCopyBody, CommandTokenQuery, EmptyBody, ExecuteBody, ExecuteReply, SnapshotBody, SnapshotsReply,
  UpdateTemplateBody, UpdateTemplateReply,
} from './instances-extras-schemas.js';

const tags = ['instances'];
const READ = { category: 'instance_read' } as const;
const WRITE = { category: 'instance_write' } as const;
const errors = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply, 404: ErrorReply };
const unavailable = { 503: ErrorReply };
/**
 * The success the clients expect from a cloud copy route (docs/spec/client-compat-more.md §c), documented as such:
 * this server never sends it (it answers 503 until it can copy to clouds).
 */
const CopyStarted = Type.Object(
  { success: Type.Literal(true) },
  { additionalProperties: true, description: 'What the clients expect on success; not sent by this server, which answers 503 service_unavailable' },
);

/** Why cloud copy cannot work here (docs/spec/client-compat-more.md, last section). */
export const CLOUD_COPY_UNAVAILABLE_MSG =
  'cloud copy is not available on this server: it needs rclone on the hosts and stored cloud credentials (cloud connections), ' +
  'which gpuplane does not provide yet; run rclone inside the instance instead';

export async function instanceExtrasRoutes(app: TypedApp, instances: InstancesModule): Promise<void> {
  app.put('/api/v0/instances/reboot/:id/', {
    config: WRITE,
    schema: {
      tags, summary: 'Reboot an instance: its container stops and starts again, keeping its GPUs', params: IdParams, body: Type.Optional(EmptyBody),
      response: { 200: ActionReply, 402: ErrorReply, 409: ErrorReply, ...errors },
    },
  }, async (request) => instances.extras.reboot(principalOf(request), request.params.id));

  app.put('/api/v0/instances/recycle/:id/', {
    config: WRITE,
    schema: {
      tags, summary: 'Recycle an instance: its container is made anew from a freshly pulled image, keeping its GPUs', params: IdParams,
      body: Type.Optional(EmptyBody),
      response: { 200: ActionReply, 402: ErrorReply, 409: ErrorReply, ...errors },
    },
  }, async (request) => instances.extras.recycle(principalOf(request), request.params.id));

  app.put('/api/v0/instances/update_template/:id/', {
    config: WRITE,
    schema: {
      tags, summary: 'Update an instance from a template, or a new image, args, env or onstart (its container is made anew)',
      params: IdParams, body: UpdateTemplateBody,
      response: { 200: UpdateTemplateReply, 402: ErrorReply, 409: ErrorReply, ...errors },
    },
  }, async (request) => instances.extras.update(principalOf(request), request.params.id, request.body));

  app.put('/api/v0/instances/command/:id/', {
    config: WRITE,
    schema: {
      tags, summary: 'Run ls, rm or du in a running instance; `result_url` serves the output once',
      description: 'No shell: one command with options and paths (relative paths start at /). `result_url` needs no key; it answers 404 until the output is there, and after it was fetched once.',
      params: IdParams, body: ExecuteBody,
      response: { 200: ExecuteReply, 409: ErrorReply, ...errors },
    },
  }, async (request) => instances.commands.execute(principalOf(request), request.params.id, request.body));

  app.get('/api/v0/instances/command_output/', {
    // The clients fetch result_url without a key: the unguessable, one-time token is the credential. It travels in
    // the query string, which the request log redacts (`token=`), so it is never written to a log.
    config: { category: 'public' },
    schema: {
      tags, summary: 'The output of an execute (once)', querystring: CommandTokenQuery,
      response: { 200: Type.String(), 400: ErrorReply, 404: ErrorReply },
    },
  }, async (request, reply) => {
    const text = await instances.commands.commandOutput(request.query.token);
    return reply.type('text/plain; charset=utf-8').header('cache-control', 'no-store').send(text);
  });

  app.post('/api/v0/instances/take_snapshot/:id/', {
    config: WRITE,
    schema: {
      tags, summary: 'Snapshot a running instance: its host commits the container and pushes it to your registry',
      description: 'Needs a real host (a machine run by `gpuplane agent`): 503 on a simulated one. The outcome is listed by GET /api/v0/instances/snapshots/{id}/.',
      params: IdParams, body: SnapshotBody,
      response: { 200: ActionReply, 409: ErrorReply, ...unavailable, ...errors },
    },
  }, async (request) => instances.commands.takeSnapshot(principalOf(request), request.params.id, request.body));

  app.get('/api/v0/instances/snapshots/:id/', {
    config: READ,
    schema: { tags, summary: "An instance's snapshots and how each went (pending, pushed, failed)", params: IdParams, response: { 200: SnapshotsReply, ...errors } },
  }, async (request) => instances.commands.snapshots(principalOf(request), request.params.id));

  const copyUnavailable = (msg: string) => async () => {
    throw new ApiError('service_unavailable', msg);
  };
  for (const [method, url, body, summary, msg] of [
    ['POST', '/api/v0/commands/rclone/', CloudCopyBody, 'Cloud copy (not available: needs rclone and cloud credentials)', CLOUD_COPY_UNAVAILABLE_MSG],
    ['DELETE', '/api/v0/commands/rclone/', CancelCopyBody, 'Cancel a cloud sync (not available: cloud copy is not)', CLOUD_COPY_UNAVAILABLE_MSG],
  ] as const) {
    app.route({
      method, url, config: WRITE,
      schema: { tags, summary, body: Type.Optional(body), response: { 200: CopyStarted, ...unavailable, ...errors } },
      handler: copyUnavailable(msg),
    });
  }
}
