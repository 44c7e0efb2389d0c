/** The `execute` and `take snapshot` requests (instances-tables.ts InstanceCommandsTable, InstanceSnapshotsTable). */
import type { Insertable, Selectable } from 'kysely';
import type { Db, Tx } from '../platform/db/connect.js';
import type { InstanceCommandsTable, InstanceSnapshotsTable } from './instances-tables.js';

export type CommandRow = Selectable<InstanceCommandsTable>;
export type SnapshotRow = Selectable<InstanceSnapshotsTable>;

export function instanceExtrasStore(db: Db) {
  return {
    async insertCommand(row: Insertable<InstanceCommandsTable>, tx: Tx = db): Promise<number> {
      return (await tx.insertInto('instance_commands').values(row).returning('id').executeTakeFirstOrThrow()).id;
    },

    async commandByToken(tokenHash: string, tx: Tx = db): Promise<CommandRow | undefined> {
      return tx.selectFrom('instance_commands').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
    },

    async commandByRequest(requestId: string, tx: Tx = db): Promise<CommandRow | undefined> {
      return tx.selectFrom('instance_commands').selectAll().where('request_id', '=', requestId).executeTakeFirst();
    },

    /** The machine's commands its agent has yet to answer, asked for after `since`. */
    async openCommands(machineId: number, since: number, tx: Tx = db): Promise<CommandRow[]> {
      return tx.selectFrom('instance_commands').selectAll().where('machine_id', '=', machineId).where('answered_at', 'is', null)
        .where('created_at', '>', since).orderBy('id').execute();
    },

    /** Records the output once: a second answer changes nothing. */
    async answerCommand(id: number, output: string, at: number, tx: Tx = db): Promise<void> {
      await tx.updateTable('instance_commands').set({ output, answered_at: at }).where('id', '=', id).where('answered_at', 'is', null).execute();
    },

    /** Drops an output past its URL's life. */
    async dropOutput(id: number, tx: Tx = db): Promise<void> {
      await tx.updateTable('instance_commands').set({ output: null }).where('id', '=', id).execute();
    },

    /** Marks the output fetched and drops it; true for exactly one caller (the fetch that gets to serve it). */
    async takeOutput(id: number, at: number, tx: Tx = db): Promise<boolean> {
      const r = await tx.updateTable('instance_commands').set({ fetched_at: at, output: null })
        .where('id', '=', id).where('fetched_at', 'is', null).where('answered_at', 'is not', null).executeTakeFirst();
      return Number(r.numUpdatedRows) === 1;
    },

    async insertSnapshot(row: Insertable<InstanceSnapshotsTable>, tx: Tx = db): Promise<number> {
      return (await tx.insertInto('instance_snapshots').values(row).returning('id').executeTakeFirstOrThrow()).id;
    },

    async snapshotByRequest(requestId: string, tx: Tx = db): Promise<SnapshotRow | undefined> {
      return tx.selectFrom('instance_snapshots').selectAll().where('request_id', '=', requestId).executeTakeFirst();
    },

    async openSnapshots(machineId: number, since: number, tx: Tx = db): Promise<SnapshotRow[]> {
      return tx.selectFrom('instance_snapshots').selectAll().where('machine_id', '=', machineId).where('answered_at', 'is', null)
        .where('created_at', '>', since).orderBy('id').execute();
    },

    async snapshotsOf(instanceId: number, tx: Tx = db): Promise<SnapshotRow[]> {
      return tx.selectFrom('instance_snapshots').selectAll().where('instance_id', '=', instanceId).orderBy('id').execute();
    },

    /** Records the outcome once and forgets the registry login. */
    async answerSnapshot(id: number, error: string | null, at: number, tx: Tx = db): Promise<void> {
      await tx.updateTable('instance_snapshots').set({ error, answered_at: at, login_sealed: null })
        .where('id', '=', id).where('answered_at', 'is', null).execute();
    },
  };
}

export type InstanceExtrasStore = ReturnType<typeof instanceExtrasStore>;
