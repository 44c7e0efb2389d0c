import type { TypedApp } from '../platform/http.js';
import { principalOf, scopeOf } from '../platform/auth.js';
import { ErrorReply } from '../platform/schemas.js';
import type { TemplatesService } from './templates-service.js';
import {
  CreateTemplateBody,
  DeleteTemplateBody,
  DeleteTemplateReply,
  SearchTemplatesQuery,
  TemplateReply,
  TemplatesReply,
  UpdateTemplateBody,
  UserTemplatesParams,
} from './templates-types.js';

const errors = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply, 404: ErrorReply };

/** Templates (spec: Templates operations; client-compat: Templates; contract §6 for delete). */
export async function templatesRoutes(app: TypedApp, { templates }: { templates: TemplatesService }): Promise<void> {
  app.get(
    '/api/v0/template/',
    {
      config: { category: 'user_read' },
      schema: {
        summary: 'Search templates',
        description: '`select_filters` is URL-encoded JSON `{<field>: {<op>: <value>}}`; `select_cols` is accepted and ignored.',
        tags: ['templates'],
        querystring: SearchTemplatesQuery,
        response: { 200: TemplatesReply, ...errors },
      },
    },
    async (request) => templates.search(scopeOf(principalOf(request)), request.query),
  );

  // The client's listing of one's own templates (issue 29 item 3): Vast.ai serves it at /users/{user_id}/templates/
  // (vast.py once posted new templates to `/users/0/templates/` `{"templates": [t]}` and read `templates[0]`), and
  // the clients read `templates` of the reply, as of search's. Its category is template search's, `user_read` (spec:
  // Authentication), though Vast.ai's own scope list files it under instance_read.
  app.get(
    '/api/v0/users/:id/templates/',
    {
      config: { category: 'user_read' },
      schema: {
        summary: "List your own templates, private ones included, newest first (`id`: your user id, or 0, me or current)",
        tags: ['templates'],
        params: UserTemplatesParams,
        response: { 200: TemplatesReply, ...errors },
      },
    },
    async (request) => {
      const p = principalOf(request);
      return templates.listOwn(scopeOf(p), p.user.id, request.params.id);
    },
  );

  app.post(
    '/api/v0/template/',
    {
      config: { category: 'user_write' },
      schema: {
        summary: 'Create a template',
        tags: ['templates'],
        body: CreateTemplateBody,
        response: { 200: TemplateReply, ...errors },
      },
    },
    async (request) => templates.create(scopeOf(principalOf(request)), request.body),
  );

  app.put(
    '/api/v0/template/',
    {
      config: { category: 'user_write' },
      schema: {
        summary: 'Edit a template by hash_id; the reply carries its new hash_id',
        tags: ['templates'],
        body: UpdateTemplateBody,
        response: { 200: TemplateReply, ...errors },
      },
    },
    async (request) => templates.update(scopeOf(principalOf(request)), request.body),
  );

  app.delete(
    '/api/v0/template/',
    {
      config: { category: 'user_write' },
      schema: {
        summary: 'Delete a template by numeric template_id (or hash_id)',
        tags: ['templates'],
        body: DeleteTemplateBody,
        response: { 200: DeleteTemplateReply, ...errors },
      },
    },
    async (request) => templates.remove(scopeOf(principalOf(request)), request.body),
  );
}
