import type { Selectable } from 'kysely';
import type { Tx } from '../platform/db/connect.js';
import type { OutboxTable } from './emulator-tables.js';

export type OutboxRow = Selectable<OutboxTable>;

export function outboxStore(db: Tx) {
  return {
    async insert(m: { channel: 'email' | 'sms'; to: string; code: string | null; text: string; sent_at: number }, tx: Tx = db) {
      await tx.insertInto('outbox').values({ channel: m.channel, to_addr: m.to, code: m.code, text: m.text, sent_at: m.sent_at }).execute();
    },
    /** Oldest first (newest last), as contract §2 says. */
    async list(filter: { to?: string; channel?: string }, tx: Tx = db): Promise<OutboxRow[]> {
      let q = tx.selectFrom('outbox').selectAll().orderBy('id');
      if (filter.to) q = q.where('to_addr', '=', filter.to);
      if (filter.channel) q = q.where('channel', '=', filter.channel);
      return q.execute();
    },
  };
}

export type OutboxStore = ReturnType<typeof outboxStore>;
