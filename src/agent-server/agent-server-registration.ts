/**
 * The operator's caps on registering machines (issue 29 item 22: one host registered 1,500 machines with made-up
 * hardware in 14 s): machines one host account has at once, and new ones an hour. Checked inside the registering
 * transaction after taking a lock row of the host's own, so concurrent registrations of one account are counted one
 * after another (PostgreSQL; SQLite has one writer at a time) and cannot pass the cap together.
 */
import type { Config } from '../config.js';
import type { Tx } from '../platform/db/connect.js';
import type { KvState } from '../platform/db/kv.js';
import { ApiError } from '../platform/errors.js';
import type { AgentStore } from './agent-server-store.js';

/** The window of `hostRegistrationsPerHour`, seconds. */
export const REGISTRATION_WINDOW_S = 3600;

/** The kv row that serializes one host account's registrations (a lock only; its value means nothing). */
const lockKey = (userId: number) => `agent.register:${userId}`;

export function registrationCaps(deps: {
  agents: Pick<AgentStore, 'registrationCounts'>;
  kv: KvState;
  config: Pick<Config, 'hostMachinesMax' | 'hostRegistrationsPerHour'>;
}) {
  const { agents, kv, config } = deps;
  return {
    /** Throws 429 `rate_limited` when `userId` may not register a new machine at `now`; call it in the inserting `tx`. */
    async admit(tx: Tx, userId: number, now: number): Promise<void> {
      // Insert-or-nothing, then write: either way this transaction holds the row until it ends.
      await kv.claim(tx, lockKey(userId), '');
      await kv.set(tx, lockKey(userId), '');
      const c = await agents.registrationCounts(userId, now - REGISTRATION_WINDOW_S, tx);
      if (c.live >= config.hostMachinesMax) {
        throw new ApiError('rate_limited', `this account has ${c.live} machines registered, the most this server allows (${config.hostMachinesMax}); delete one before registering another`);
      }
      if (c.recent >= config.hostRegistrationsPerHour) {
        const retry = Math.max(1, Math.ceil((c.oldestRecent ?? now) + REGISTRATION_WINDOW_S - now));
        throw new ApiError(
          'rate_limited',
          `this account registered ${c.recent} machines in the last hour, the most this server allows (${config.hostRegistrationsPerHour}); try again in ${retry} s`,
          {}, undefined, { 'Retry-After': String(retry) },
        );
      }
    },
  };
}
