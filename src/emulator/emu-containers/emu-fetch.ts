/**
 * What an adopted machine's agent sends the server, through the emulator (emu-agents.ts):
 * - nothing while the machine is silent (faults `unknown`, `offline`, `no_heartbeat` on the machine): each request
 *   fails as an unreachable server's would, so the control plane notices the silence as it would a real host's;
 * - no word of a silent instance (those faults on one instance): left out of the observed state, as a simulated host
 *   leaves it (simhost-agent.ts);
 * - no hardware: the machine stays the simulated one the renter chose (its description came from the emulator's
 *   catalogue, and the agent only declares what it needs to run);
 * and it heartbeats every EMU_HEARTBEAT_S whatever the server asks, so a recovered host is heard again at once and a
 * virtual clock advanced by less than the offline timeout does not find it silent.
 */
import type { FetchLike } from '../../agent/agent-embedding-contract.js';

export interface Silence {
  machine: boolean;
  instances: Set<number>;
}

/** Seconds between an adopted machine's heartbeats. */
export const EMU_HEARTBEAT_S = 2;

export function emuFetch(silence: Silence, base: FetchLike = (i, o) => globalThis.fetch(i, o)): FetchLike {
  return async (input, init) => {
    if (silence.machine) throw new TypeError('fetch failed (the emulator keeps this host silent until recover)');
    if (!(init?.method === 'PUT' && /^\/api\/v0\/agent\/status\/?$/.test(new URL(input).pathname) && typeof init.body === 'string')) {
      return base(input, init);
    }
    const body = JSON.parse(init.body) as { hardware?: unknown; observed?: { instance_id: number }[] };
    delete body.hardware;
    if (body.observed) body.observed = body.observed.filter((o) => !silence.instances.has(o.instance_id));
    const res = await base(input, { ...init, body: JSON.stringify(body) });
    if (!res.ok) return res;
    const reply = (await res.json()) as { heartbeat_interval?: number };
    if (reply.heartbeat_interval !== undefined) reply.heartbeat_interval = Math.min(reply.heartbeat_interval, EMU_HEARTBEAT_S);
    const headers = new Headers(res.headers);
    headers.delete('content-length');
    headers.delete('content-encoding');
    return new Response(JSON.stringify(reply), { status: res.status, headers });
  };
}
