import { Type } from 'typebox';
import type { TypedApp } from '../platform/http.js';
import { principalOf } from '../platform/auth.js';
import { ErrorReply } from '../platform/schemas.js';
import type { AuditService } from './audit-service.js';

const errors = { 401: ErrorReply, 403: ErrorReply };

/** `vastai show audit-logs` needs a bare list. */
export const AuditLogsReply = Type.Array(
  Type.Object({
    id: Type.Integer(), user_id: Type.Integer(), api_key_id: Type.Union([Type.Integer(), Type.Null()]), action: Type.String(),
    api_route: Type.String(), ip_address: Type.String(),
    args: Type.Object({ params: Type.Record(Type.String(), Type.Unknown()), fields: Type.Array(Type.String()) }), created_at: Type.Number(),
  }),
);
export const IpAddrsReply = Type.Object({
  success: Type.Boolean(),
  results: Type.Array(Type.Object({ ip: Type.String(), first_seen: Type.Number(), first_location: Type.Null() })),
});
export const IpAddrsQuery = Type.Object({ owner: Type.Optional(Type.Literal('me')) });

export async function auditRoutes(app: TypedApp, { audit }: { audit: AuditService }): Promise<void> {
  app.get(
    '/api/v0/audit_logs/',
    {
      config: { category: 'user_read' },
      schema: { summary: 'Your security-relevant actions (a team\'s, for its owner, in team context)', tags: ['account'], response: { 200: AuditLogsReply, ...errors } },
    },
    async (request) => audit.list(principalOf(request)),
  );
  app.get(
    '/api/v0/users/me/ipaddrs',
    {
      config: { category: 'user_read' },
      schema: { summary: 'The addresses your requests came from', tags: ['account'], querystring: IpAddrsQuery, response: { 200: IpAddrsReply, ...errors } },
    },
    async (request) => audit.ipaddrs(principalOf(request).user.id, request.ip),
  );
}
