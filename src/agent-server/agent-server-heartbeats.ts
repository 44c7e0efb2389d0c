/**
 * Heartbeats: `PUT /api/v0/agent/status/` as it arrives, with the machine key as presented. Most of a fleet, most of
 * the time, is online with nothing on it and reports nothing: that heartbeat is one statement, key check included
 * (agent-server-store.ts `touchIfIdle`), and on PostgreSQL the heartbeats that arrive together share it
 * (platform/coalesce.ts). Anything else takes the full path (agent-server-reports.ts).
 */
import type { Clock } from '../platform/clock.js';
import { coalescing } from '../platform/coalesce.js';
import { digestEqual, sha256Hex } from '../platform/crypto.js';
import type { StatusBody } from '../protocol/agent-protocol-schemas.js';
import type { Static } from 'typebox';
import type { AgentStore } from './agent-server-store.js';
import { desiredVersion } from './agent-server-desired.js';
import { faultOf } from './agent-server-health.js';

type StatusRequest = Static<typeof StatusBody>;

/**
 * Heartbeats (and long-poll renewals) in one statement at most, and such statements running at once per process. One
 * at a time measured best (`agents` bench, 10,000 agents, 3 processes): heartbeat p99 28–33 ms, against 58 ms with two
 * and 90 ms with four, whose smaller statements cost the database more in all.
 */
export const COALESCE = { maxBatch: 500, maxInFlight: 1 };
/** The version of a machine's desired state with nothing in it. */
const EMPTY_VERSION = desiredVersion([], [], [], []);

export interface HeartbeatsDeps {
  /** PostgreSQL: concurrent heartbeats share statements. SQLite runs each at once in-process: nothing to share. */
  shared: boolean;
  clock: Clock;
  agents: AgentStore;
  heartbeatInterval: number;
  /** The full path: the machine of a key, or 401. */
  authenticate: (key: string | null) => Promise<number>;
  /** The full path: a report applied (agent-server-reports.ts). */
  status: (machineId: number, body: StatusRequest) => Promise<{ success: true; desired_version: number; heartbeat_interval: number; hardware_pending?: true }>;
}

export function heartbeats({ shared, clock, agents, heartbeatInterval, authenticate, status }: HeartbeatsDeps) {
  type Beat = { keyHash: string; agentVersion: string; gpuTelemetry?: string };
  // PostgreSQL: one round trip and one commit for all that arrive while earlier ones run.
  const touchIfIdle = shared
    ? coalescing(async (beats: Beat[]) => {
      const touched = await agents.touchManyIfIdle(beats, clock.now());
      return beats.map((b) => touched.get(b.keyHash));
    }, COALESCE)
    : (b: Beat) => agents.touchIfIdle(b.keyHash, clock.now(), b.agentVersion, undefined, b.gpuTelemetry);

  return {
    /**
     * `PUT /api/v0/agent/status/` with the machine key as presented: an online machine with nothing on it that reports
     * nothing is one statement (its desired state is the empty one); anything else takes the full path.
     */
    async report(key: string | null, body: StatusRequest) {
      // A GPU sample with a fault changes the machine (agent-server-health.ts): the full path.
      const healthy = body.gpu_telemetry === undefined || faultOf(body.gpu_telemetry) === null;
      if (key !== null && body.observed.length === 0 && !body.hardware && healthy) {
        const hash = sha256Hex(key);
        const gpuTelemetry = body.gpu_telemetry === undefined ? undefined : JSON.stringify(body.gpu_telemetry);
        const row = await touchIfIdle({ keyHash: hash, agentVersion: body.agent_version, gpuTelemetry });
        // Found by digest; the final comparison is constant-time all the same.
        if (row && row.key_hash !== null && digestEqual(row.key_hash, hash)) {
          return { success: true as const, desired_version: EMPTY_VERSION, heartbeat_interval: heartbeatInterval };
        }
      }
      return status(await authenticate(key), body);
    },
  };
}
