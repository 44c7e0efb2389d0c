import { sql, type Insertable, type Selectable } from 'kysely';
import type { DialectName, Tx } from '../platform/db/connect.js';
import { flushWaived, NO_FLUSH } from '../platform/db/no-flush.js';
import { prepared } from '../platform/db/prepared.js';
import type { AuditLogsTable } from './audit-tables.js';

export type AuditRow = Selectable<AuditLogsTable>;

/** Most entries one read returns: the newest. */
export const AUDIT_LIST_MAX = 1000;

export function auditStore(db: Tx, dialect: DialectName) {
  // Every audited success writes one (platform/db/prepared.ts); PostgreSQL, outside a transaction.
  const insertUnflushed = prepared(
    ['user_id', 'team_id', 'api_key_id', 'action', 'api_route', 'ip_address', 'args', 'created_at'],
    (r: Insertable<AuditLogsTable>) => ({
      compile: () => sql`INSERT INTO audit_logs (user_id, team_id, api_key_id, action, api_route, ip_address, args, created_at)
        SELECT ${r.user_id}, ${r.team_id}, ${r.api_key_id}, ${r.action}, ${r.api_route}, ${r.ip_address}, ${r.args}, ${r.created_at}
        FROM ${NO_FLUSH}`.compile(db),
    }),
  );
  return {
    /** An entry, written after the action it records (platform/db/no-flush.ts: PostgreSQL commits it without a flush). */
    async insert(row: Insertable<AuditLogsTable>, tx: Tx = db): Promise<void> {
      if (flushWaived(tx, dialect)) await insertUnflushed(tx, { ...row, team_id: row.team_id ?? null, api_key_id: row.api_key_id ?? null });
      else await tx.insertInto('audit_logs').values(row).execute();
    },

    /** The user's own entries (personal context), or a team's (team context): newest first. */
    async list(by: { userId: number } | { teamId: number }, tx: Tx = db): Promise<AuditRow[]> {
      let q = tx.selectFrom('audit_logs').selectAll();
      q = 'teamId' in by ? q.where('team_id', '=', by.teamId) : q.where('user_id', '=', by.userId).where('team_id', 'is', null);
      return q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(AUDIT_LIST_MAX).execute();
    },

    async prune(before: number, tx: Tx = db): Promise<number> {
      const r = await tx.deleteFrom('audit_logs').where('created_at', '<', before).executeTakeFirst();
      return Number(r.numDeletedRows);
    },

    /** Records an address once per user (the first sighting wins); PostgreSQL commits it without a flush. */
    async sawIp(userId: number, ip: string, at: number, tx: Tx = db): Promise<void> {
      if (!flushWaived(tx, dialect)) {
        await tx.insertInto('user_ipaddrs').values({ user_id: userId, ip, first_seen: at }).onConflict((oc) => oc.columns(['user_id', 'ip']).doNothing()).execute();
        return;
      }
      await sql`INSERT INTO user_ipaddrs (user_id, ip, first_seen) SELECT ${userId}, ${ip}, ${at} FROM ${NO_FLUSH}
        ON CONFLICT (user_id, ip) DO NOTHING`.execute(tx);
    },

    async ipsOf(userId: number, tx: Tx = db) {
      return tx.selectFrom('user_ipaddrs').select(['ip', 'first_seen']).where('user_id', '=', userId).orderBy('first_seen').execute();
    },
  };
}

export type AuditStore = ReturnType<typeof auditStore>;
