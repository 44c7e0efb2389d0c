/**
 * Logs of instances on real hosts: a renter's `request_logs` becomes a log request in its machine's desired state,
 * the agent answers it with the container's log (`PUT /api/v0/agent/logs/{request_id}/`), and the instances feature
 * waits a while for that answer (its AgentLogsPort, instances-ports.ts).
 */
import type { Static } from 'typebox';
import type { Clock } from '../platform/clock.js';
import { ApiError } from '../platform/errors.js';
import type { Random } from '../platform/random.js';
import { LOG_TEXT_MAX_CHARS, type LogAnswerBody } from '../protocol/agent-protocol-schemas.js';
import type { InstanceChanges } from '../instances/instances-agent-contract.js';
import type { AgentStore } from './agent-server-store.js';
import { deadline } from './agent-server-deadline.js';
import { POLL_MS } from './agent-server-polls.js';

/** A log request the agent has not answered in this long is dropped from its desired state. */
export const LOG_ANSWER_TTL_S = 120;
/** How long fetching a real host's log waits for its agent's answer before saying "not yet" (404; clients retry). */
export const LOG_WAIT_MS = 5000;

export interface LogsDeps {
  clock: Clock;
  random: Random;
  agents: AgentStore;
  hub: InstanceChanges;
  /** Something the desired state is built from changed (a log request), or a waiter's answer came. */
  notify: () => void;
}

export function agentLogs({ clock, random, agents, hub, notify }: LogsDeps) {
  return {
    /** `PUT /api/v0/agent/logs/{request_id}/`: the agent's answer to a log request of its machine. */
    async answerLogs(machineId: number, requestId: string, body: Static<typeof LogAnswerBody>): Promise<{ success: true }> {
      const row = await agents.logRequest(requestId);
      if (!row || row.machine_id !== machineId) throw new ApiError('not_found', `log request ${requestId} not found`);
      if (row.answered_at === null) {
        await agents.answerLogRequest(requestId, { text: body.text.slice(-LOG_TEXT_MAX_CHARS), error: body.error ?? null, answered_at: clock.now() });
        notify();
      }
      return { success: true };
    },

    /** The instances feature's log hook (instances-ports.ts AgentLogsPort). */
    logs: {
      async requested(req: { logRequestId: number; instanceId: number; machineId: number | null; tail: number | null; filter: string | null }): Promise<void> {
        if (req.machineId === null || !(await agents.byMachine(req.machineId))) return;
        await agents.insertLogRequest({
          request_id: `log_${random.bytes(16).toString('hex')}`, machine_id: req.machineId, instance_id: req.instanceId,
          log_request_id: req.logRequestId, tail: req.tail, filter: req.filter, text: null, error: null, answered_at: null,
          expires_at: clock.now() + LOG_ANSWER_TTL_S,
        });
        notify();
      },

      async textOf(logRequestId: number): Promise<string | undefined> {
        let row = await agents.logRequestOf(logRequestId);
        if (!row) return undefined;
        const limit = deadline(LOG_WAIT_MS);
        try {
          while (row && row.answered_at === null && !limit.passed() && !hub.closed) {
            await hub.next(POLL_MS);
            row = await agents.logRequestOf(logRequestId);
          }
        } finally {
          limit.cancel();
        }
        if (!row || row.answered_at === null) throw new ApiError('not_found', 'the host has not sent this log yet; try again in a moment');
        if (row.text === '' && row.error) return `${row.error}\n`;
        return row.text ?? '';
      },
    },
  };
}
