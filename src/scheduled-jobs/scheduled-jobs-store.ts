import type { Insertable, Selectable, Updateable } from 'kysely';
import type { Tx } from '../platform/db/connect.js';
import { prepared } from '../platform/db/prepared.js';
import type { ScheduledJobsTable } from './scheduled-jobs-tables.js';

export type ScheduledJobRow = Selectable<ScheduledJobsTable>;
export type NewScheduledJob = Insertable<ScheduledJobsTable>;

export function scheduledJobsStore(db: Tx) {
  // Run by every destroy (platform/db/prepared.ts).
  const removeOf = prepared(['instanceId'], (q: { instanceId: number }) =>
    db.deleteFrom('scheduled_jobs').where('instance_id', '=', q.instanceId).returning('id'));
  return {
    async list(owner: string, tx: Tx = db): Promise<ScheduledJobRow[]> {
      return tx.selectFrom('scheduled_jobs').selectAll().where('owner', '=', owner).orderBy('id').execute();
    },

    async count(owner: string, tx: Tx = db): Promise<number> {
      const r = await tx.selectFrom('scheduled_jobs').select((eb) => eb.fn.countAll<number>().as('n')).where('owner', '=', owner).executeTakeFirstOrThrow();
      return Number(r.n);
    },

    async find(id: number, tx: Tx = db): Promise<ScheduledJobRow | undefined> {
      return tx.selectFrom('scheduled_jobs').selectAll().where('id', '=', id).executeTakeFirst();
    },

    /** The owner's job, locked for the rest of the transaction on PostgreSQL (an update and a run serialize). */
    async lockOwned(id: number, owner: string, postgres: boolean, tx: Tx): Promise<ScheduledJobRow | undefined> {
      const q = tx.selectFrom('scheduled_jobs').selectAll().where('id', '=', id).where('owner', '=', owner);
      return (postgres ? q.forUpdate() : q).executeTakeFirst();
    },

    async lock(id: number, postgres: boolean, tx: Tx): Promise<ScheduledJobRow | undefined> {
      const q = tx.selectFrom('scheduled_jobs').selectAll().where('id', '=', id);
      return (postgres ? q.forUpdate() : q).executeTakeFirst();
    },

    async findByDedupe(key: string, tx: Tx = db): Promise<ScheduledJobRow | undefined> {
      return tx.selectFrom('scheduled_jobs').selectAll().where('dedupe_key', '=', key).executeTakeFirst();
    },

    /** Inserts the job; undefined when an equal one exists (the unique `dedupe_key` decides races). */
    async insert(row: NewScheduledJob, tx: Tx = db): Promise<ScheduledJobRow | undefined> {
      return tx
        .insertInto('scheduled_jobs')
        .values(row)
        .onConflict((oc) => oc.column('dedupe_key').doNothing())
        .returningAll()
        .executeTakeFirst();
    },

    async update(id: number, set: Updateable<ScheduledJobsTable>, tx: Tx = db): Promise<void> {
      await tx.updateTable('scheduled_jobs').set(set).where('id', '=', id).execute();
    },

    /** An occurrence starts: counted, with its due time, its outcome not known yet. */
    async claimRun(id: number, dueAt: number, next: number | null, now: number, tx: Tx): Promise<void> {
      await tx
        .updateTable('scheduled_jobs')
        .set((eb) => ({ run_count: eb(eb.ref('run_count'), '+', 1), last_run_at: dueAt, last_run_status: null, last_run_msg: null, next_run_at: next, updated_at: now }))
        .where('id', '=', id)
        .execute();
    },

    /** The outcome of the occurrence due at `dueAt` (a later occurrence's record is not overwritten). */
    async recordOutcome(id: number, dueAt: number, status: number | null, msg: string, tx: Tx = db): Promise<void> {
      await tx.updateTable('scheduled_jobs').set({ last_run_status: status, last_run_msg: msg }).where('id', '=', id).where('last_run_at', '=', dueAt).execute();
    },

    async remove(id: number, tx: Tx = db): Promise<void> {
      await tx.deleteFrom('scheduled_jobs').where('id', '=', id).execute();
    },

    /** Removes the instance's jobs and returns their ids (to cancel their pending occurrences). */
    async removeForInstance(instanceId: number, tx: Tx): Promise<number[]> {
      const { rows } = await removeOf(tx, { instanceId });
      return rows.map((r) => r.id);
    },
  };
}

export type ScheduledJobsStore = ReturnType<typeof scheduledJobsStore>;
