import type { TypedApp } from '../platform/http.js';
import { principalOf } from '../platform/auth.js';
import { ErrorReply } from '../platform/schemas.js';
import type { SshKeysService } from './ssh-keys-service.js';
import { SshKeyBody, SshKeyDeleteReply, SshKeyParams, SshKeyReply, SshKeysReply, SshKeyUpdateBody } from './ssh-keys-types.js';

const errors = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply, 404: ErrorReply, 409: ErrorReply };

/** SSH keys of the account (contract §3). Attach and detach live with instances. */
export async function sshKeysRoutes(app: TypedApp, { sshKeys }: { sshKeys: SshKeysService }): Promise<void> {
  app.post(
    '/api/v0/ssh/',
    {
      config: { category: 'user_write' },
      schema: { summary: 'Register an SSH public key', tags: ['ssh-keys'], body: SshKeyBody, response: { 200: SshKeyReply, ...errors } },
    },
    async (request) => sshKeys.create(principalOf(request).user.id, request.body.ssh_key),
  );

  app.get(
    '/api/v0/ssh/',
    {
      config: { category: 'user_read' },
      schema: { summary: 'List your SSH keys', tags: ['ssh-keys'], response: { 200: SshKeysReply, ...errors } },
    },
    async (request) => sshKeys.list(principalOf(request).user.id),
  );

  app.put(
    '/api/v0/ssh/:id/',
    {
      config: { category: 'user_write' },
      schema: {
        summary: 'Replace an SSH key',
        tags: ['ssh-keys'],
        params: SshKeyParams,
        body: SshKeyUpdateBody,
        response: { 200: SshKeyReply, ...errors },
      },
    },
    async (request) => sshKeys.update(principalOf(request).user.id, request.params.id, request.body),
  );

  app.delete(
    '/api/v0/ssh/:id/',
    {
      config: { category: 'user_write' },
      schema: { summary: 'Delete an SSH key', tags: ['ssh-keys'], params: SshKeyParams, response: { 200: SshKeyDeleteReply, ...errors } },
    },
    async (request) => sshKeys.remove(principalOf(request).user.id, request.params.id),
  );
}
