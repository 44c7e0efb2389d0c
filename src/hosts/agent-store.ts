import { sql, type Selectable } from 'kysely';
import type { Db, Tx } from '../platform/db/connect.js';
import type { AgentLogRequestsTable, AgentMachinesTable } from './agent-tables.js';

export type AgentMachineRow = Selectable<AgentMachinesTable>;
export type AgentLogRequestRow = Selectable<AgentLogRequestsTable>;

/** The agent tables (agent-tables.ts). */
export function agentStore(db: Db) {
  return {
    async byRegistration(userId: number, registrationId: string, tx: Tx = db): Promise<AgentMachineRow | undefined> {
      return tx.selectFrom('agent_machines').selectAll().where('user_id', '=', userId).where('registration_id', '=', registrationId).executeTakeFirst();
    },

    async byKeyHash(keyHash: string, tx: Tx = db): Promise<AgentMachineRow | undefined> {
      return tx.selectFrom('agent_machines').selectAll().where('key_hash', '=', keyHash).executeTakeFirst();
    },

    async byMachine(machineId: number, tx: Tx = db): Promise<AgentMachineRow | undefined> {
      return tx.selectFrom('agent_machines').selectAll().where('machine_id', '=', machineId).executeTakeFirst();
    },

    async insert(row: AgentMachineRow, tx: Tx): Promise<void> {
      await tx.insertInto('agent_machines').values(row).execute();
    },

    async update(machineId: number, patch: Partial<Omit<AgentMachineRow, 'machine_id'>>, tx: Tx = db): Promise<void> {
      await tx.updateTable('agent_machines').set(patch).where('machine_id', '=', machineId).execute();
    },

    async insertLogRequest(row: AgentLogRequestRow, tx: Tx = db): Promise<void> {
      await tx.insertInto('agent_log_requests').values(row).execute();
    },

    /** The machine's log requests its agent has yet to answer (not expired). */
    async openLogRequests(machineId: number, now: number, tx: Tx = db): Promise<AgentLogRequestRow[]> {
      return tx.selectFrom('agent_log_requests').selectAll().where('machine_id', '=', machineId).where('answered_at', 'is', null)
        .where('expires_at', '>', now).orderBy('request_id').execute();
    },

    async logRequest(requestId: string, tx: Tx = db): Promise<AgentLogRequestRow | undefined> {
      return tx.selectFrom('agent_log_requests').selectAll().where('request_id', '=', requestId).executeTakeFirst();
    },

    async logRequestOf(logRequestId: number, tx: Tx = db): Promise<AgentLogRequestRow | undefined> {
      return tx.selectFrom('agent_log_requests').selectAll().where('log_request_id', '=', logRequestId).executeTakeFirst();
    },

    async answerLogRequest(requestId: string, a: { text: string; error: string | null; answered_at: number }, tx: Tx = db): Promise<void> {
      await tx.updateTable('agent_log_requests').set(a).where('request_id', '=', requestId).where('answered_at', 'is', null).execute();
    },

    /**
     * A cheap digest of what the machine's desired state is built from (one query): its live instances (each state
     * change bumps `state_version`), their SSH keys, and its open log requests. A held long-poll rebuilds the desired
     * state only when this changes.
     */
    async fingerprint(machineId: number, tx: Tx = db): Promise<string> {
      const { rows } = await sql<{ n: number; sv: number; k: number; kmax: number; l: number }>`
        SELECT
          (SELECT COUNT(*) FROM instances WHERE machine_id = ${machineId} AND destroyed_at IS NULL) AS n,
          (SELECT COALESCE(SUM(state_version), 0) FROM instances WHERE machine_id = ${machineId} AND destroyed_at IS NULL) AS sv,
          (SELECT COUNT(*) FROM instance_ssh_keys k JOIN instances i ON i.id = k.instance_id WHERE i.machine_id = ${machineId} AND i.destroyed_at IS NULL) AS k,
          (SELECT COALESCE(MAX(k.id), 0) FROM instance_ssh_keys k JOIN instances i ON i.id = k.instance_id WHERE i.machine_id = ${machineId} AND i.destroyed_at IS NULL) AS kmax,
          (SELECT COUNT(*) FROM agent_log_requests WHERE machine_id = ${machineId} AND answered_at IS NULL) AS l`.execute(tx);
      const r = rows[0];
      return [r.n, r.sv, r.k, r.kmax, r.l].map(Number).join(':');
    },

    /** How many times each instance was booted: its `boot` counter (events where a boot began: status null). */
    async bootCounts(instanceIds: number[], tx: Tx = db): Promise<Map<number, number>> {
      const out = new Map<number, number>();
      if (!instanceIds.length) return out;
      const rows = await tx.selectFrom('instance_events').select(['instance_id', (eb) => eb.fn.countAll<number>().as('n')])
        .where('instance_id', 'in', instanceIds).where('actual_status', 'is', null).groupBy('instance_id').execute();
      for (const r of rows) out.set(r.instance_id, Number(r.n));
      return out;
    },

    /** SSH keys attached to each instance. */
    async sshKeysOf(instanceIds: number[], tx: Tx = db): Promise<Map<number, string[]>> {
      const out = new Map<number, string[]>();
      if (!instanceIds.length) return out;
      const rows = await tx.selectFrom('instance_ssh_keys').select(['instance_id', 'ssh_key']).where('instance_id', 'in', instanceIds).orderBy('id').execute();
      for (const r of rows) out.set(r.instance_id, [...(out.get(r.instance_id) ?? []), r.ssh_key]);
      return out;
    },
  };
}

export type AgentStore = ReturnType<typeof agentStore>;
