/**
 * The agent protocol (docs/AGENT-PROTOCOL.md): what `gpuplane agent` calls on the server. `register` takes the host's
 * API key; every other call takes the machine key it returned (a client made with `apiKey: machineKey`).
 */
import type { Static } from 'typebox';
import type {
  AnswerReply, CommandAnswerBody, DesiredQuery, DesiredReply, LogAnswerBody, LogAnswerReply, RegisterBody, RegisterReply, SnapshotAnswerBody,
  StatusBody, StatusReply,
} from '../../protocol/agent-protocol-schemas.js';
import type { Transport } from '../transport.js';

export type AgentRegisterRequest = Static<typeof RegisterBody>;
export type AgentRegisterReply = Static<typeof RegisterReply>;
export type AgentStatusRequest = Static<typeof StatusBody>;
export type AgentStatusReply = Static<typeof StatusReply>;
export type AgentDesiredQuery = Static<typeof DesiredQuery>;
export type AgentDesiredReply = Static<typeof DesiredReply>;
export type AgentLogAnswer = Static<typeof LogAnswerBody>;
export type AgentCommandAnswer = Static<typeof CommandAnswerBody>;
export type AgentSnapshotAnswer = Static<typeof SnapshotAnswerBody>;

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
    /** `PUT /api/v0/agent/commands/{request_id}/`: answers a renter's `execute` with what the command printed. */
    answerCommand: (requestId: string, body: AgentCommandAnswer) =>
      t.request<Static<typeof AnswerReply>>('PUT', `/api/v0/agent/commands/${encodeURIComponent(requestId)}/`, { body }),
    /** `PUT /api/v0/agent/snapshots/{request_id}/`: the snapshot was pushed (no `error`), or why it was not. */
    answerSnapshot: (requestId: string, body: AgentSnapshotAnswer) =>
      t.request<Static<typeof AnswerReply>>('PUT', `/api/v0/agent/snapshots/${encodeURIComponent(requestId)}/`, { body }),
  };
}
