/**
 * The SQL of the tunnels feature: the holder row of each machine's tunnel (tunnels-tables.ts). A process writes its row
 * when it accepts a tunnel (replacing any other process's) and deletes only its own, so a newer holder is never erased
 * by an older one that lost its tunnel late.
 */
import type { Selectable } from 'kysely';
import type { Db } from '../platform/db/connect.js';
import type { AgentTunnelsTable } from './tunnels-tables.js';

export type TunnelHolderRow = Selectable<AgentTunnelsTable>;

export function tunnelsStore(db: Db) {
  return {
    /** This process holds the machine's tunnel now. */
    async hold(row: TunnelHolderRow): Promise<void> {
      await db
        .insertInto('agent_tunnels')
        .values(row)
        .onConflict((oc) => oc.column('machine_id').doUpdateSet({ process_id: row.process_id, hop_url: row.hop_url, connected_at: row.connected_at }))
        .execute();
    },
    /** The process no longer holds it: its row goes, unless another process has taken the machine since. */
    async release(machineId: number, processId: string): Promise<void> {
      await db.deleteFrom('agent_tunnels').where('machine_id', '=', machineId).where('process_id', '=', processId).execute();
    },
    async holder(machineId: number): Promise<TunnelHolderRow | undefined> {
      return db.selectFrom('agent_tunnels').selectAll().where('machine_id', '=', machineId).executeTakeFirst();
    },
  };
}

export type TunnelsStore = ReturnType<typeof tunnelsStore>;
