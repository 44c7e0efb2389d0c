/**
 * The agent protocol (docs/AGENT-PROTOCOL.md): what `gpuplane agent` calls on the server. `register` takes the host's
 * API key; every other call takes the machine key it returned (a client made with `apiKey: machineKey`).
 */
import type { Static } from 'typebox';
import type {
  DesiredQuery, DesiredReply, LogAnswerBody, LogAnswerReply, RegisterBody, RegisterReply, StatusBody, StatusReply,
} from '../../fleet/agent-protocol-schemas.js';
import type { Transport } from '../transport.js';

export type AgentRegisterRequest = Static<typeof RegisterBody>;
export type AgentRegisterReply = Static<typeof RegisterReply>;
export type AgentStatusRequest = Static<typeof StatusBody>;
export type AgentStatusReply = Static<typeof StatusReply>;
export type AgentDesiredQuery = Static<typeof DesiredQuery>;
export type AgentDesiredReply = Static<typeof DesiredReply>;
export type AgentLogAnswer = Static<typeof LogAnswerBody>;

export function agentApi(t: Transport) {
  return {
    /** `POST /api/v0/machines/register/`: the machine's id and credential (shown once). */
    register: (body: AgentRegisterRequest) => t.request<AgentRegisterReply>('POST', '/api/v0/machines/register/', { body }),
    /** `PUT /api/v0/agent/status/`: heartbeat and observed state; replies with the current desired-state version. */
    status: (body: AgentStatusRequest) => t.request<AgentStatusReply>('PUT', '/api/v0/agent/status/', { body }),
    /**
     * `GET /api/v0/agent/desired/`: the machine's desired state, at once when its version is not `after`, else after
     * up to `wait` seconds. Abort it with `signal`.
     */
    desired: (query: AgentDesiredQuery, signal?: AbortSignal) =>
      t.request<AgentDesiredReply>('GET', '/api/v0/agent/desired/', { query, signal }),
    /** `PUT /api/v0/agent/logs/{request_id}/`: answers a renter's `request_logs` with the container's log tail. */
    answerLogs: (requestId: string, body: AgentLogAnswer) =>
      t.request<Static<typeof LogAnswerReply>>('PUT', `/api/v0/agent/logs/${encodeURIComponent(requestId)}/`, { body }),
  };
}
