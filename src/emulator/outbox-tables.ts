import type { Generated } from 'kysely';

/** Messages the emulator "sent" instead of sending (contract §2 outbox). */
export interface OutboxTable {
  id: Generated<number>;
  channel: string;
  to_addr: string;
  code: string | null;
  text: string;
  sent_at: number;
}

export interface OutboxTables {
  outbox: OutboxTable;
}
