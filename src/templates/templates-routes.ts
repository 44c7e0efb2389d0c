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
