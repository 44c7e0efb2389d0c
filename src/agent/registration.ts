/**
 * The machine credential: read from the state directory, or obtained once by registering with the host's API key.
 * The registration id is saved before the first attempt, so a retry after a lost reply names the same machine.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { AgentHardwareT } from '../protocol/agent-protocol-schemas.js';
import { Backoff } from '../sdk/backoff.js';
import { createClient } from '../sdk/client.js';
import { GpuplaneError } from '../sdk/errors.js';
import type { FetchLike } from '../sdk/transport.js';
import type { AgentLog } from './agent-log.js';
import type { StateDir } from './state-store.js';

/** Waits between registration attempts while the server cannot be reached: doubling from 1 s to this, jittered. */
const RETRY_MAX_MS = 30_000;

/** The agent cannot go on (no credential and no key, a key refused, a credential revoked): it stops with this. */
export class AgentFatalError extends Error {}

export interface MachineCredential {
  url: string;
  machineId: number;
  machineKey: string;
  /** The registration's id: what the agent's owner id (owner.ts) is derived from. */
  registrationId: string;
}

/** Whether an error is worth another try later: no reply at all, or the server's own failure. */
export function transient(err: unknown): boolean {
  return err instanceof GpuplaneError && (err.status === 0 || err.status >= 500 || err.status === 429 || err.status === 408);
}

export interface RegisterOptions {
  state: StateDir;
  /** `--url`; when absent, the one saved at registration. */
  url: string | undefined;
  apiKey: string | undefined;
  hardware: AgentHardwareT;
  agentVersion: string;
  randomId(): string;
  log: AgentLog;
  signal: AbortSignal;
  fetch?: FetchLike;
}

export async function ensureCredential(o: RegisterOptions): Promise<MachineCredential> {
  const saved = o.state.readCredentials();
  const url = o.url ?? saved?.url;
  if (url === undefined) throw new AgentFatalError('no server URL: pass --url (or GPUPLANE_URL) on the first start');
  if (saved?.machine_id !== undefined && saved.machine_key !== undefined) {
    if (saved.url !== url) {
      // The same server at a new address: the credential goes with the machine, not the address.
      o.log.warn({ machine_id: saved.machine_id, from: saved.url, to: url }, 'server URL changed; keeping the machine credential');
      o.state.writeCredentials({ ...saved, url });
    }
    return { url, machineId: saved.machine_id, machineKey: saved.machine_key, registrationId: saved.registration_id };
  }
  if (!o.apiKey) {
    throw new AgentFatalError('this machine is not registered yet: pass --api-key (or GPUPLANE_API_KEY) with a key of the host account');
  }
  const registrationId = saved?.url === url ? saved.registration_id : o.randomId();
  o.state.writeCredentials({ url, registration_id: registrationId });
  const client = createClient({ url, apiKey: o.apiKey, fetch: o.fetch });
  const retry = new Backoff({ firstMs: 1000, maxMs: RETRY_MAX_MS });
  for (;;) {
    if (o.signal.aborted) throw new AgentFatalError('stopped before the machine was registered');
    try {
      const r = await client.agent.register({ registration_id: registrationId, agent_version: o.agentVersion, hardware: o.hardware });
      o.state.writeCredentials({ url, registration_id: registrationId, machine_id: r.machine_id, machine_key: r.machine_key });
      o.log.info({ machine_id: r.machine_id, url }, 'machine registered');
      return { url, machineId: r.machine_id, machineKey: r.machine_key, registrationId };
    } catch (err) {
      if (!transient(err)) {
        const e = err as GpuplaneError;
        throw new AgentFatalError(`registration refused: ${e.msg ?? String(err)}${e.status ? ` (HTTP ${e.status}, ${e.error})` : ''}`);
      }
      const waitMs = retry.next();
      o.log.warn({ err: (err as GpuplaneError).msg, retry_in_s: Math.round(waitMs) / 1000 }, 'cannot register yet; retrying');
      // A stop ends the pause early; the loop's first line then gives up.
      await sleep(waitMs, undefined, { signal: o.signal }).catch(() => undefined);
    }
  }
}
