import type { TypedApp } from '../platform/http.js';
import { principalOf } from '../platform/auth.js';
import { ErrorReply } from '../platform/schemas.js';
import type { ApiKeysService } from './keys-service.js';
import { ApiKeyObject, ApiKeysReply, CreateApiKeyBody, CreateApiKeyReply, DeleteApiKeyReply, KeyId, ResetApiKeyBody, ResetApiKeyReply } from './keys-schemas.js';
import { ApiError } from '../platform/errors.js';

const tags = ['api keys'];
const errors = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply, 404: ErrorReply };

// Re-exported for modules that took the key schema from here before it moved to keys-schemas.ts.
export { ApiKeyObject };

/** API keys (contract §3): the secret is in the create reply only; list and show never carry it. */
export async function keysRoutes(app: TypedApp, { apiKeys }: { apiKeys: ApiKeysService }): Promise<void> {
  app.post(
    '/api/v0/auth/apikeys/',
    {
      config: { category: 'user_write' },
      schema: {
        tags,
        summary: 'Create an API key (the secret is shown once, in this reply)',
        description:
          'Without `permissions` the key gets the rights of the key that creates it; with them, no more than those. ' +
          'With `team_id` (a team you are a member of) the key acts for the team, bounded by your role at every request.',
        body: CreateApiKeyBody,
        response: {
          200: CreateApiKeyReply,
          ...errors,
        },
      },
    },
    async (request) => apiKeys.create(principalOf(request), request.body ?? {}),
  );

  app.get(
    '/api/v0/auth/apikeys/',
    {
      config: { category: 'user_read' },
      schema: {
        tags,
        summary: "List the caller's API keys (a team key lists that team's keys)",
        response: { 200: ApiKeysReply, ...errors },
      },
    },
    async (request) => apiKeys.list(principalOf(request)),
  );

  app.get(
    '/api/v0/auth/apikeys/:id/',
    {
      config: { category: 'user_read' },
      schema: { tags, summary: 'Show an API key (without its secret)', params: KeyId, response: { 200: ApiKeyObject, ...errors } },
    },
    async (request) => apiKeys.show(principalOf(request), request.params.id),
  );

  app.delete(
    '/api/v0/auth/apikeys/:id/',
    {
      config: { category: 'user_write' },
      schema: {
        tags,
        summary: 'Delete (revoke) an API key; every process refuses it from the next request',
        params: KeyId,
        response: { 200: DeleteApiKeyReply, ...errors },
      },
    },
    async (request) => apiKeys.remove(principalOf(request), request.params.id),
  );

  // `vastai reset api-key` sends `PUT /api/v0/commands/reset_apikey/` `{"client_id": "me"}`; vast.py has named the
  // other form, `PUT /api/v0/users/current/reset-apikey/?owner=me` with the same body, since the command was added (in
  // a line commented out there), and issue 29 item 3 has it answered too. On gpuplane both are one reset: the key of
  // the request is replaced, revoked at once, and a new one with its name, rights and team is shown once in the reply;
  // the user's other keys stay as they are (each is replaced with itself, or deleted). The reply is what `vastai`
  // prints (`New api-key: <new_api_key>`); vast.py reads nothing of it.
  for (const url of ['/api/v0/commands/reset_apikey/', '/api/v0/users/current/reset-apikey/']) {
    app.put(
      url,
      {
        config: { category: 'user_write' },
        schema: {
          tags,
          summary: 'Replace the API key of this request: it stops working at once; the new secret is shown once, here',
          ...(url.startsWith('/api/v0/users/') ? { description: 'The older path of `PUT /api/v0/commands/reset_apikey/`: the same reset.' } : {}),
          body: ResetApiKeyBody,
          response: { 200: ResetApiKeyReply, ...errors },
        },
      },
      async (request) => {
        const p = principalOf(request);
        const target = request.body.client_id;
        if (target !== undefined && target !== 'me' && target !== p.user.id) throw new ApiError('permission_denied', 'you can reset only your own API key (client_id "me")');
        return apiKeys.reset(p);
      },
    );
  }
}
