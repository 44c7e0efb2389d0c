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

/** Remaining count of each injected emulator fault (kept in the database: several processes share it). */
export interface EmuFaultCountersTable {
  name: string;
  remaining: number;
}

/** The emulator's tables (migrations 0004 and 0012). */
export interface EmulatorTables {
  outbox: OutboxTable;
  emu_fault_counters: EmuFaultCountersTable;
}
