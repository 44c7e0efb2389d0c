/**
 * Registration of a real host's machine (`POST /api/v0/machines/register/`): a machine in the fleet and its agent's
 * key, once per registration id. And the operator's caps on registering machines (issue 29 item 22: one host
 * registered 1,500 machines with made-up hardware in 14 s): machines one host account has at once, and new ones an
 * hour. Checked inside the registering transaction after taking a lock row of the host's own, so concurrent
 * registrations of one account are counted one after another (PostgreSQL; SQLite has one writer at a time) and cannot
 * pass the cap together.
 */
import type { Static } from 'typebox';
import type { Config } from '../config.js';
import type { Clock } from '../platform/clock.js';
import { sha256Hex } from '../platform/crypto.js';
import type { Db, Tx } from '../platform/db/connect.js';
import type { KvState } from '../platform/db/kv.js';
import { ApiError } from '../platform/errors.js';
import { secretToken, type Random } from '../platform/random.js';
import type { Principal } from '../platform/auth.js';
import type { RegisterBody } from '../protocol/agent-protocol-schemas.js';
import type { MachinesService } from '../machines/machines-service.js';
import type { AgentStore } from './agent-server-store.js';
import { machineFromHardware } from './agent-server-hardware.js';
import { checkHardware } from './agent-server-checks.js';

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

export interface RegistrationDeps {
  db: Db;
  clock: Clock;
  random: Random;
  config: Pick<Config, 'agentOfflineAfter' | 'hostMachinesMax' | 'hostRegistrationsPerHour'>;
  fleet: MachinesService;
  agents: AgentStore;
  kv: KvState;
  /** The machine's earlier key is no longer remembered (agent-server-keys.ts). */
  forgetKeysOf: (machineId: number) => void;
  /** The liveness sweep runs (agent-server-liveness.ts): a machine that never reports goes offline too. */
  ensureSweep: (tx: Tx, dueAt: number) => Promise<void>;
}

export function registration({ db, clock, random, config, fleet, agents, kv, forgetKeysOf, ensureSweep }: RegistrationDeps) {
  const caps = registrationCaps({ agents, kv, config });
  return {
    /** `POST /api/v0/machines/register/`: the machine of this registration id (new or the same) and a new key. */
    async register(principal: Principal, body: Static<typeof RegisterBody>): Promise<{ success: true; machine_id: number; machine_key: string }> {
      const hw = body.hardware;
      checkHardware(hw);
      const userId = principal.user.id;
      const key = secretToken(random, 'gpm_');
      const keyHash = sha256Hex(key);
      const now = clock.now();
      const attempt = () => db.transaction().execute(async (tx) => {
        const found = await agents.byRegistration(userId, body.registration_id, tx);
        if (found) {
          // The earlier key (whose reply may have been lost) is revoked by this one; a deleted machine's (revoked by
          // force_delete, perhaps while this ran) stays revoked: a deleted machine never gets a working key again.
          if (!(await agents.rekey(found.machine_id, keyHash, body.agent_version, tx))) {
            throw new ApiError('conflict', `machine ${found.machine_id} of this registration_id was deleted and cannot be registered again; `
              + 'register it as a new machine with a new registration_id (move the agent\'s agent.json out of its state directory)');
          }
          forgetKeysOf(found.machine_id);
          return found.machine_id;
        }
        await caps.admit(tx, userId, now);
        const id = await fleet.addAgentMachine(tx, userId, machineFromHardware(hw));
        await agents.insert({
          machine_id: id, user_id: userId, registration_id: body.registration_id, key_hash: keyHash, agent_version: body.agent_version,
          hardware_declared: hw.hardware_declared ? 1 : 0, hardware: JSON.stringify(hw), hardware_pending: 0, last_report_at: null, offline: 0, created_at: now,
          gpu_telemetry: null, gpu_telemetry_at: null, gpu_fault: null,
        }, tx);
        // A machine that never reports goes offline like one that stopped reporting.
        await ensureSweep(tx, now + config.agentOfflineAfter);
        return id;
      });
      let machineId: number;
      try {
        machineId = await attempt();
      } catch (err) {
        // Two registrations of one id at once: the unique index let one insert win; this one takes its machine.
        if (err instanceof ApiError || !(await agents.byRegistration(userId, body.registration_id))) throw err;
        machineId = await attempt();
      }
      return { success: true, machine_id: machineId, machine_key: key };
    },
  };
}
