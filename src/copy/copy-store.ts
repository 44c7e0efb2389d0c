/**
 * What the copy feature keeps: the copies this server process runs (in memory: a copy is an rsync process here, and
 * dies with it), and the cancel marks that reach copies run by another process on the same database (the platform's
 * `kv` table, `copy.cancel.<destination instance id>` = when it was asked). No table of its own: nothing of a copy
 * outlives the process that runs it, and the renter sees its progress in the destination's `status_msg`.
 */
import type { Db } from '../platform/db/connect.js';
import { kvState } from '../platform/db/kv.js';

export interface RunningCopy {
  srcId: number;
  dstId: number;
  userId: number;
  /** When it started, by the service clock: a cancel mark at or after it stops it. */
  startedAt: number;
  abort: AbortController;
  /** Settles once the copy is over (done, failed or canceled) and its status written. */
  done: Promise<void>;
}

const cancelKey = (dstId: number) => `copy.cancel.${dstId}`;

export function copyStore(db: Db) {
  const running = new Map<number, RunningCopy>();
  const kv = kvState(db);
  return {
    /** The copy into `dstId` this process runs. */
    byDst: (dstId: number): RunningCopy | undefined => running.get(dstId),
    /** How many copies this process runs for the user. */
    countOfUser: (userId: number): number => [...running.values()].filter((c) => c.userId === userId).length,
    add(copy: RunningCopy): void {
      running.set(copy.dstId, copy);
    },
    remove(copy: RunningCopy): void {
      if (running.get(copy.dstId) === copy) running.delete(copy.dstId);
    },
    all: (): RunningCopy[] => [...running.values()],

    /** Asks whichever process runs a copy into `dstId` to stop it. */
    async markCancel(dstId: number, at: number): Promise<void> {
      if (!(await kv.claim(db, cancelKey(dstId), String(at)))) await kv.set(db, cancelKey(dstId), String(at));
    },
    /** When a cancel of copies into `dstId` was last asked, if ever (and not yet cleared). */
    async cancelMark(dstId: number): Promise<number | undefined> {
      const v = await kv.get(db, cancelKey(dstId));
      return v === undefined ? undefined : Number(v);
    },
    async clearCancel(dstId: number): Promise<void> {
      await kv.remove(db, cancelKey(dstId));
    },
  };
}

export type CopyStore = ReturnType<typeof copyStore>;
