/** SQL of the transition rules and slow-pull windows (transitions-tables.ts). Every function takes the caller's transaction or db. */
import type { Tx } from '../../platform/db/connect.js';
import type { EmuTransitionsTable } from './transitions-tables.js';

export const transitionsStore = {
  async putRule(tx: Tx, row: EmuTransitionsTable): Promise<void> {
    await tx.insertInto('emu_transitions').values(row)
      .onConflict((oc) => oc.column('scope').doUpdateSet({ mode: row.mode, seconds: row.seconds, updated_at: row.updated_at })).execute();
  },

  async removeRule(tx: Tx, scope: string): Promise<void> {
    await tx.deleteFrom('emu_transitions').where('scope', '=', scope).execute();
  },

  /** Every rule, or one instance's; how many went. */
  async removeRules(tx: Tx, instanceId?: number): Promise<number> {
    let q = tx.deleteFrom('emu_transitions');
    if (instanceId !== undefined) q = q.where('instance_id', '=', instanceId);
    return Number((await q.executeTakeFirst()).numDeletedRows);
  },

  async rules(tx: Tx): Promise<EmuTransitionsTable[]> {
    return tx.selectFrom('emu_transitions').selectAll().execute();
  },

  /** The slow-pull windows open at `now`, by machine. */
  async openSlowPulls(tx: Tx, now: number) {
    return tx.selectFrom('emu_slow_pulls').selectAll()
      .where((eb) => eb.or([eb('until', 'is', null), eb('until', '>', now)])).orderBy('machine_id').orderBy('ref').execute();
  },

  async putSlowPull(tx: Tx, ref: string, machineIds: readonly number[], pullSeconds: number, until: number | null): Promise<void> {
    await tx.deleteFrom('emu_slow_pulls').where('ref', '=', ref).execute();
    if (machineIds.length === 0) return;
    await tx.insertInto('emu_slow_pulls').values(machineIds.map((machine_id) => ({ ref, machine_id, pull_seconds: pullSeconds, until }))).execute();
  },

  /** Ends a window (of `ref`), or every one. */
  async endSlowPulls(tx: Tx, ref?: string): Promise<void> {
    let q = tx.deleteFrom('emu_slow_pulls');
    if (ref !== undefined) q = q.where('ref', '=', ref);
    await q.execute();
  },
};
