/**
 * The copy routes of `vastai copy` / `vastai cancel copy` (client-compat-more §c): one service call each. Both copy
 * routes follow the same rules by what the two sides are (copy-service.ts), as the client sends a copy with an
 * explicit `local:` side to copy_direct. Cloud copy (`/commands/rclone/`) is not here: it still answers 503
 * (instances-extras-routes.ts).
 */
import type { TypedApp } from '../platform/http.js';
import { principalOf } from '../platform/auth.js';
import { ErrorReply } from '../platform/schemas.js';
import type { CopyService } from './copy-service.js';
import { CancelCopyBody, CancelCopyReply, CopyBody, CopyReply } from './copy-schemas.js';

const tags = ['instances'];
const WRITE = { category: 'instance_write' } as const;
const errors = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply, 404: ErrorReply, 409: ErrorReply };

export async function copyRoutes(app: TypedApp, { copy }: { copy: CopyService }): Promise<void> {
  // A copy between instances is an rsync process of this server: the app's close stops it.
  app.addHook('onClose', async () => copy.close());

  app.put('/api/v0/commands/rsync/', {
    config: WRITE,
    schema: {
      tags, summary: 'Copy between an instance and this machine: where your rsync reaches the instance (over SSH, user vastai_kaalia)',
      description:
        'One side local (`src_id` or `dst_id` null or "local"): the reply gives `dst_addr`/`dst_port` (upload) or `src_addr`/`src_port` (download), ' +
        'the SSH gateway and the instance\'s copy port; then `rsync -e "ssh -p PORT" SRC vastai_kaalia@ADDR::ID/PATH` copies, with your SSH key. ' +
        'Both sides instances: as copy_direct (the server copies).',
      body: CopyBody,
      response: { 200: CopyReply, 429: ErrorReply, 503: ErrorReply, ...errors },
    },
  }, async (request) => copy.copy(principalOf(request), request.body, request.ip));

  app.put('/api/v0/commands/copy_direct/', {
    config: WRITE,
    schema: {
      tags, summary: 'Copy a directory between two of your instances (in the background; progress in the destination\'s status_msg)',
      description:
        'Both instances running on machines run by gpuplane agent, on any hosts: the server copies through both hosts\' tunnels. One copy into an ' +
        'instance at a time; DELETE cancels it. With one side local, the reply is as the rsync route\'s (the vastai client sends an explicit local: side here).',
      body: CopyBody,
      response: { 200: CopyReply, 429: ErrorReply, 503: ErrorReply, ...errors },
    },
  }, async (request) => copy.copy(principalOf(request), request.body, request.ip));

  app.delete('/api/v0/commands/copy_direct/', {
    config: WRITE,
    schema: {
      tags, summary: 'Cancel the copies into an instance (`dst_id`)', body: CancelCopyBody,
      response: { 200: CancelCopyReply, ...errors },
    },
  }, async (request) => copy.cancel(principalOf(request), request.body));
}
