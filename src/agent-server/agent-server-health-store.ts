/** SQL of GPU health (issue 33): the latest samples of machines, and the down periods reliability2 is measured from. */
import type { Db, Tx } from '../platform/db/connect.js';
import type { AgentHealthPeriodsTable } from './agent-server-tables.js';

export interface HealthPeriod {
  kind: AgentHealthPeriodsTable['kind'];
  reason: string;
  started_at: number;
  ended_at: number | null;
}

export function agentHealthStore(db: Db) {
  return {
    /** The latest sample of each of these machines (agent machines only; others have none). */
    async samplesOf(machineIds: readonly number[], tx: Tx = db): Promise<{ machine_id: number; gpu_telemetry: string | null; gpu_telemetry_at: number | null; gpu_fault: string | null }[]> {
      if (machineIds.length === 0) return [];
      return tx.selectFrom('agent_machines').select(['machine_id', 'gpu_telemetry', 'gpu_telemetry_at', 'gpu_fault'])
        .where('machine_id', 'in', [...new Set(machineIds)]).execute();
    },

    async open(machineId: number, kind: HealthPeriod['kind'], reason: string, at: number, tx: Tx): Promise<void> {
      await tx.insertInto('agent_health_periods').values({ machine_id: machineId, kind, reason: reason.slice(0, 500), started_at: at, ended_at: null }).execute();
    },

    async close(machineId: number, kind: HealthPeriod['kind'], at: number, tx: Tx): Promise<void> {
      await tx.updateTable('agent_health_periods').set({ ended_at: at })
        .where('machine_id', '=', machineId).where('kind', '=', kind).where('ended_at', 'is', null).execute();
    },

    /** The machine's periods that overlap [since, now], oldest first. */
    async periodsSince(machineId: number, since: number, tx: Tx = db): Promise<HealthPeriod[]> {
      const rows = await tx.selectFrom('agent_health_periods').select(['kind', 'reason', 'started_at', 'ended_at'])
        .where('machine_id', '=', machineId)
        .where((eb) => eb.or([eb('ended_at', 'is', null), eb('ended_at', '>=', since)]))
        .orderBy('started_at').orderBy('id').execute();
      return rows.map((r) => ({ kind: r.kind, reason: r.reason, started_at: Number(r.started_at), ended_at: r.ended_at === null ? null : Number(r.ended_at) }));
    },

    /**
     * Machines above `afterId` with a period that ended at or after `since` or still lasts (their reliability2 may
     * move as the window rolls), in id order, `limit` at most.
     */
    async machinesWithPeriodsSince(since: number, afterId: number, limit: number, tx: Tx = db): Promise<{ machine_id: number; created_at: number }[]> {
      const rows = await tx.selectFrom('agent_health_periods as p').innerJoin('agent_machines as a', 'a.machine_id', 'p.machine_id')
        .select(['p.machine_id', 'a.created_at']).distinct()
        .where('p.machine_id', '>', afterId)
        .where((eb) => eb.or([eb('p.ended_at', 'is', null), eb('p.ended_at', '>=', since)]))
        .orderBy('p.machine_id').limit(limit).execute();
      return rows.map((r) => ({ machine_id: r.machine_id, created_at: Number(r.created_at) }));
    },

    /** The machine's latest periods, newest first (the host's `show machine`). */
    async latest(machineIds: readonly number[], perMachine: number, tx: Tx = db): Promise<Map<number, HealthPeriod[]>> {
      const out = new Map<number, HealthPeriod[]>();
      if (machineIds.length === 0) return out;
      const rows = await tx.selectFrom('agent_health_periods').select(['machine_id', 'kind', 'reason', 'started_at', 'ended_at'])
        .where('machine_id', 'in', [...new Set(machineIds)]).orderBy('started_at', 'desc').orderBy('id', 'desc').execute();
      for (const r of rows) {
        const list = out.get(r.machine_id) ?? [];
        if (list.length >= perMachine) continue;
        list.push({ kind: r.kind, reason: r.reason, started_at: Number(r.started_at), ended_at: r.ended_at === null ? null : Number(r.ended_at) });
        out.set(r.machine_id, list);
      }
      return out;
    },
  };
}

export type AgentHealthStore = ReturnType<typeof agentHealthStore>;
