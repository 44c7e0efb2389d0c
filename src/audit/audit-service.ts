import { LRUCache } from 'lru-cache';
import type { Clock } from '../platform/clock.js';
import type { Principal } from '../platform/auth.js';
import { ApiError } from '../platform/errors.js';
import type { AuditStore } from './audit-store.js';

/** How often (service time) a process deletes entries past the retention period. */
export const AUDIT_PRUNE_EVERY_S = 3600;
/** Addresses remembered per process as already recorded; past it, the least recently seen is forgotten. */
const SEEN_IPS_MAX = 10_000;
const DAY_S = 86_400;

export interface AuditDeps {
  audit: AuditStore;
  clock: Clock;
  retentionDays: number;
  /** The team's owner (the teams feature), who alone reads a team's log. */
  teamOwner(teamId: number): Promise<number | undefined>;
  /** Where a failed write is reported: never to the caller, whose action already succeeded. */
  warn(err: unknown, what: string): void;
}

export interface AuditEntry {
  userId: number;
  teamId: number | null;
  apiKeyId: number | null;
  action: string;
  route: string;
  ip: string;
  params: Record<string, unknown>;
  fields: string[];
}

export function auditServiceFactory({ audit, clock, retentionDays, teamOwner, warn }: AuditDeps) {
  let prunedAt = -Infinity;
  const seen = new LRUCache<string, true>({ max: SEEN_IPS_MAX });
  /** Address writes still in flight (they run after the reply): a listing in this process waits for them. */
  const writing = new Set<Promise<void>>();

  async function pruneIfDue(now: number): Promise<void> {
    if (now - prunedAt < AUDIT_PRUNE_EVERY_S) return;
    prunedAt = now;
    await audit.prune(now - retentionDays * DAY_S);
  }

  function sawIp(userId: number, ip: string): void {
    const k = `${userId} ${ip}`;
    if (seen.get(k)) return; // get, not has: a hit keeps the address among the recently seen
    seen.set(k, true);
    const write = audit.sawIp(userId, ip, clock.now()).catch((err: unknown) => {
      seen.delete(k);
      warn(err, 'could not record a client address');
    });
    writing.add(write);
    void write.finally(() => writing.delete(write));
  }

  return {
    async record(e: AuditEntry): Promise<void> {
      const now = clock.now();
      // One entry per statement, never several users' in one: its foreign keys take a share lock on each user's row,
      // and an insert of several, taking them in its own order, deadlocked with credit transfers (which lock both
      // users' rows, in id order).
      await audit.insert({
        user_id: e.userId, team_id: e.teamId, api_key_id: e.apiKeyId, action: e.action, api_route: e.route, ip_address: e.ip,
        args: JSON.stringify({ params: e.params, fields: e.fields }), created_at: now,
      });
      await pruneIfDue(now);
    },

    /** Records a user's client address the first time this process sees the pair (one map lookup otherwise). */
    sawIp,

    /** `GET /api/v0/audit_logs/`: a bare list, newest first; a team's log in its context, for its owner only. */
    async list(p: Principal) {
      if (p.teamId !== null && (await teamOwner(p.teamId)) !== p.user.id) {
        throw new ApiError('permission_denied', "only the team's owner reads the team's audit log");
      }
      const rows = await audit.list(p.teamId !== null ? { teamId: p.teamId } : { userId: p.user.id });
      return rows.map((r) => ({
        id: r.id, user_id: r.user_id, api_key_id: r.api_key_id, action: r.action, api_route: r.api_route,
        ip_address: r.ip_address, args: JSON.parse(r.args) as { params: Record<string, unknown>; fields: string[] }, created_at: r.created_at,
      }));
    },

    /** `GET /api/v0/users/me/ipaddrs`. No location database: `first_location` is null. */
    async ipaddrs(userId: number, currentIp: string) {
      sawIp(userId, currentIp); // this request's own address counts too
      await Promise.all(writing);
      const rows = await audit.ipsOf(userId);
      return { success: true as const, results: rows.map((r) => ({ ip: r.ip, first_seen: r.first_seen, first_location: null })) };
    },
  };
}

export type AuditService = ReturnType<typeof auditServiceFactory>;
