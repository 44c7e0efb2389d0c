import type { TypedApp } from '../platform/http.js';
import { principalOf, scopeOf } from '../platform/auth.js';
import { ErrorReply } from '../platform/schemas.js';
import type { EnvVarsService } from './env-vars-service.js';
import { EnvVarBody, EnvVarDeleteBody, EnvVarOkReply, EnvVarsReply } from './env-vars-types.js';

const errors = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply, 404: ErrorReply, 409: ErrorReply };

/** Account environment variables, as `vastai show/create/update/delete env-var` call them (client-compat-more §b). */
export async function envVarsRoutes(app: TypedApp, { envVars }: { envVars: EnvVarsService }): Promise<void> {
  app.get(
    '/api/v0/secrets/',
    {
      config: { category: 'user_read' },
      schema: { summary: 'List your environment variables', tags: ['env-vars'], response: { 200: EnvVarsReply, ...errors } },
    },
    async (request) => envVars.list(scopeOf(principalOf(request))),
  );

  app.post(
    '/api/v0/secrets/',
    {
      config: { category: 'user_write' },
      schema: { summary: 'Create an environment variable', tags: ['env-vars'], body: EnvVarBody, response: { 200: EnvVarOkReply, ...errors } },
    },
    async (request) => envVars.create(scopeOf(principalOf(request)), request.body),
  );

  app.put(
    '/api/v0/secrets/',
    {
      config: { category: 'user_write' },
      schema: { summary: 'Change an environment variable', tags: ['env-vars'], body: EnvVarBody, response: { 200: EnvVarOkReply, ...errors } },
    },
    async (request) => envVars.update(scopeOf(principalOf(request)), request.body),
  );

  app.delete(
    '/api/v0/secrets/',
    {
      config: { category: 'user_write' },
      schema: { summary: 'Delete an environment variable', tags: ['env-vars'], body: EnvVarDeleteBody, response: { 200: EnvVarOkReply, ...errors } },
    },
    async (request) => envVars.remove(scopeOf(principalOf(request)), request.body.key),
  );
}
