/**
 * A real host as the instances feature asks it (instances-hosts-contract.ts): everything goes to the machine's agent.
 * An `execute` is listed in the machine's desired state until the agent answers (instances-commands.ts `agent`), a
 * snapshot too, and a log request is recorded for the agent, whose answer the log's reader waits for
 * (agent-server-service.ts `logs`).
 */
import { ApiError } from '../platform/errors.js';
import type { InstanceHostsPort, LogRequest } from '../instances/instances-hosts-contract.js';

/** The agent server's log requests and answers. */
export interface AgentLogs {
  requested(req: LogRequest): Promise<void>;
  /** The agent's answer, waiting a little for it; undefined when no agent was asked. */
  textOf(logRequestId: number): Promise<string | undefined>;
}

export function agentHostsPort(logs: AgentLogs): InstanceHostsPort {
  return {
    // The agent answers later: the command is listed for it (its output null until then).
    execute: async () => undefined,
    assertCanSnapshot: async () => undefined,
    logsRequested: (req) => logs.requested(req),
    async logText(req) {
      const text = await logs.textOf(req.logRequestId);
      if (text === undefined) throw new ApiError('not_found', 'no such log, or it expired');
      return text;
    },
  };
}
