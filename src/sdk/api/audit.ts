/** The audit log and client addresses (`/api/v0/audit_logs/`, `/api/v0/users/me/ipaddrs`). */
import type { Static } from 'typebox';
import type { AuditLogsReply, IpAddrsReply } from '../../audit/audit-routes.js';
import type { Transport } from '../transport.js';

export type AuditEntry = Static<typeof AuditLogsReply>[number];

export function auditApi(t: Transport) {
  return {
    /** Newest first; in a team context, the team's (for its owner). */
    logs: () => t.request<AuditEntry[]>('GET', '/api/v0/audit_logs/'),
    ipaddrs: async () => (await t.request<Static<typeof IpAddrsReply>>('GET', '/api/v0/users/me/ipaddrs', { query: { owner: 'me' } })).results,
  };
}
