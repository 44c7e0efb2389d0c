import { kvState } from '../platform/db/kv.js';
import { sql } from 'kysely';
import type { Config } from '../config.js';
import { isVirtual, type Clock } from '../platform/clock.js';
import type { Store, Tx } from '../platform/db/connect.js';
import { ApiError } from '../platform/errors.js';
import type { Scheduler } from '../platform/scheduler.js';
import type { KeysService } from '../keys/keys-service.js';
import { bootstrapKeys } from '../keys/keys-contract.js';
import { usersContract } from '../users/users-contract.js';
import { toUserObject, type NewUserInput, type UsersService } from '../users/users-service.js';
import type { FaultHandler, FaultRequest } from '../platform/faults.js';
import type { OutboxStore } from './outbox-store.js';
import { SECRET_KEY_KV } from '../platform/secret-key.js';

/** Something that restores its part of the fresh, seeded state after `/_emu/reset` (e.g. the simulated fleet). */
export type ResetHook = (tx: Tx) => Promise<void>;

export interface EmulatorDeps {
  config: Config;
  store: Store;
  clock: Clock;
  scheduler: Scheduler;
  users: UsersService;
  keysService: KeysService;
  outbox: OutboxStore;
  /** Records the starting credit of a user made here as credit added (billing's payments; invoices show it). */
  recordCredit?: (tx: Tx, userId: number, amountMicro: number, description: string) => Promise<void>;
}

export function emulatorServiceFactory({ store, clock, scheduler, users, keysService, outbox, recordCredit }: EmulatorDeps) {
  const kv = kvState(store.db);
  const resetHooks: ResetHook[] = [];

  /**
   * The tables of this database. Kysely's introspection lists every schema's tables on PostgreSQL, and several
   * gpuplane databases may share one PostgreSQL (one schema each), so ask for the current schema only.
   */
  async function ownTables(): Promise<string[]> {
    const q =
      store.dialect === 'postgres'
        ? sql<{ name: string }>`select tablename as name from pg_catalog.pg_tables where schemaname = current_schema()`
        : sql<{ name: string }>`select name from sqlite_master where type = 'table'`;
    return (await q.execute(store.db)).rows.map((r) => r.name);
  }
  const faultHandlers = new Map<string, FaultHandler>();

  return {
    /** Features register the faults they implement, by name. */
    registerFault(name: string, handler: FaultHandler): void {
      faultHandlers.set(name, handler);
    },

    async fault(req: FaultRequest): Promise<{ success: boolean } & Record<string, unknown>> {
      const handler = faultHandlers.get(req.fault);
      if (!handler) {
        const known = [...faultHandlers.keys()].join(', ') || 'none yet';
        throw new ApiError('bad_request', `body.fault: unknown fault ${JSON.stringify(req.fault)} (known: ${known})`);
      }
      return { success: true, ...((await handler(req)) ?? {}) };
    },

    /** Features add what `reset` must re-seed. */
    onReset(hook: ResetHook): void {
      resetHooks.push(hook);
    },

    now(): { now: number } {
      return { now: clock.now() };
    },

    async advance(seconds: number): Promise<{ now: number }> {
      if (!isVirtual(clock)) throw new ApiError('clock_not_virtual', 'the clock is real; start with GPUPLANE_CLOCK=virtual to advance it');
      return { now: await scheduler.advance(seconds) };
    },

    async createUser(input: NewUserInput & { legacy_tfa?: boolean }) {
      return store.db.transaction().execute(async (tx) => {
        if (input.legacy_tfa && !input.phone_number) {
          throw new ApiError('bad_request', 'legacy_tfa needs a phone_number (the legacy state has a number on file)');
        }
        const user = await users.createUser(
          { ...input, credit: input.credit ?? 100, tfa_status: input.legacy_tfa ? 'legacy' : 'disabled' },
          tx,
        );
        if (user.credit_micro > 0) await recordCredit?.(tx, user.id, user.credit_micro, 'starting credit');
        const { secret } = await keysService.create({ user_id: user.id, kind: 'user', name: 'emulator' }, tx);
        return { user: toUserObject(user), api_key: secret };
      });
    },

    async outbox(filter: { to?: string; channel?: string }) {
      const rows = await outbox.list(filter);
      return {
        messages: rows.map((r) => ({ id: r.id, channel: r.channel, to: r.to_addr, code: r.code, text: r.text, sent_at: r.sent_at })),
      };
    },

    /**
     * Back to a fresh, seeded state: every table emptied except that the bootstrap owner and its bootstrap keys are
     * kept (so the bootstrap key stays valid), and the generated secret key, then each feature re-seeds.
     */
    async reset(): Promise<{ success: true }> {
      const tables = (await ownTables()).filter((n) => !n.startsWith('kysely_') && !n.startsWith('sqlite_'));
      await store.db.transaction().execute(async (tx) => {
        const keys = await bootstrapKeys.live(tx);
        const owners = await usersContract.usersByIds(tx, [...new Set(keys.map((k) => k.user_id))]);
        // The generated secret key of a shared PostgreSQL database (platform/secret-key.ts) outlives a reset: every
        // running process still encrypts with it, and a process started later must read the same key.
        const secretKey = await kv.get(tx, SECRET_KEY_KV);
        if (store.dialect === 'postgres') {
          await sql.raw(`TRUNCATE ${tables.map((t) => `"${t}"`).join(', ')} CASCADE`).execute(tx);
        } else {
          // Checked at commit, when every table is consistent again.
          await sql`PRAGMA defer_foreign_keys = ON`.execute(tx);
          for (const t of tables) await sql.raw(`DELETE FROM "${t}"`).execute(tx);
        }
        await usersContract.restore(tx, owners);
        await bootstrapKeys.restore(tx, keys);
        if (secretKey !== undefined) await kv.claim(tx, SECRET_KEY_KV, secretKey);
        for (const hook of resetHooks) await hook(tx);
      });
      await scheduler.saveVirtualNow();
      return { success: true };
    },
  };
}

export type EmulatorService = ReturnType<typeof emulatorServiceFactory>;
