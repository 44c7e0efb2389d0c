/**
 * Records the audited routes' successes (audit-actions.ts) and each user's client addresses, without the features
 * knowing: an `onSend` hook is added to the audited routes only, so every other route runs no extra code.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AUDITED_ROUTES } from './audit-actions.js';
import type { AuditService } from './audit-service.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** A route that signs a user in sets this (no principal exists yet), so its success is recorded for that user. */
    auditUserId?: number;
  }
}

function bodyFields(body: unknown): string[] {
  return body && typeof body === 'object' && !Array.isArray(body) ? Object.keys(body).sort() : [];
}

export function installAudit(app: FastifyInstance, audit: AuditService): void {
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      const action = AUDITED_ROUTES[`${method} ${route.url}`];
      if (!action) continue;
      const record = async (request: FastifyRequest, statusCode: number) => {
        if (statusCode >= 400) return;
        const p = request.principal;
        const userId = p?.user.id ?? request.auditUserId;
        if (userId === undefined) return;
        await audit.record({
          userId, teamId: p?.teamId ?? null, apiKeyId: p?.key.id ?? null, action, route: `${method} ${route.url}`,
          ip: request.ip, params: (request.params ?? {}) as Record<string, unknown>, fields: bodyFields(request.body),
        });
      };
      const existing = route.onSend ? (Array.isArray(route.onSend) ? route.onSend : [route.onSend]) : [];
      route.onSend = [...existing, async (request, reply, payload) => {
        await record(request, reply.statusCode);
        return payload;
      }];
    }
  });
}

/** For the one per-request point (platform/http.ts RequestLog): each signed-in request's client address. */
export function ipRecorder(audit: AuditService) {
  return (request: FastifyRequest): void => {
    const p = request.principal;
    if (p) audit.sawIp(p.user.id, request.ip);
  };
}
