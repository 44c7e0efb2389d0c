/**
 * Group commit for SQLite. SQLite runs one write transaction at a time and each commit waits for the disk
 * (`synchronous = FULL`), so renting one instance per transaction is bounded by the disk's sync rate. Rents that
 * arrive together share one transaction instead, each inside its own savepoint: a failed rent rolls back only its
 * savepoint and the others commit. The caller sees exactly what a transaction of its own would have given it.
 * PostgreSQL runs transactions concurrently with row locks, so there each unit gets its own transaction.
 */
import { sql } from 'kysely';
import type { Db, DialectName, Tx } from '../platform/db/connect.js';

/** Units per shared transaction: bounds the latency one slow batch adds to the requests behind it. */
export const MAX_BATCH = 64;
/** PostgreSQL deadlock (40P01) and serialization failure (40001): the transaction is rolled back and may be rerun. */
const RETRYABLE = new Set(['40P01', '40001']);
export const TX_ATTEMPTS = 4;

/**
 * Runs `fn` in a transaction, rerunning it when PostgreSQL aborted it to break a deadlock. The writers of a
 * machine's GPU holds take its row first (MachinesApi.lockMachine), so they no longer deadlock among themselves (a
 * stop locked its instance and then the fleet, a rent the fleet and then the instances it outbids); this is the
 * backstop for any pair that still takes locks in different orders: rather than a 500, the loser runs again.
 */
export async function transact<T>(db: Db, fn: (tx: Tx) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction().execute(fn);
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (attempt >= TX_ATTEMPTS || typeof code !== 'string' || !RETRYABLE.has(code)) throw err;
    }
  }
}

interface Pending {
  run: (tx: Tx) => Promise<unknown>;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

export function txBatcher(db: Db, dialect: DialectName) {
  const queue: Pending[] = [];
  let scheduled = false;
  let draining = false;

  async function runBatch(batch: Pending[]): Promise<void> {
    const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
    try {
      await db.transaction().execute(async (tx) => {
        for (const unit of batch) {
          await sql.raw('SAVEPOINT unit').execute(tx);
          try {
            outcomes.push({ ok: true, value: await unit.run(tx) });
            await sql.raw('RELEASE unit').execute(tx);
          } catch (error) {
            await sql.raw('ROLLBACK TO unit').execute(tx);
            await sql.raw('RELEASE unit').execute(tx);
            outcomes.push({ ok: false, error });
          }
        }
      });
    } catch (error) {
      // The commit itself failed: nothing of the batch is stored.
      for (const unit of batch) unit.reject(error);
      return;
    }
    batch.forEach((unit, i) => {
      const o = outcomes[i];
      if (o.ok) unit.resolve(o.value);
      else unit.reject(o.error);
    });
  }

  async function drain(): Promise<void> {
    scheduled = false;
    if (draining) return;
    draining = true;
    try {
      while (queue.length) await runBatch(queue.splice(0, MAX_BATCH));
    } finally {
      draining = false;
    }
  }

  return {
    /** Runs `fn` in a transaction (shared with others arriving at the same moment, on SQLite) and returns its result. */
    run<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
      if (dialect !== 'sqlite') return transact(db, fn);
      return new Promise<T>((resolve, reject) => {
        queue.push({ run: fn, resolve: resolve as (v: unknown) => void, reject });
        // Start after the requests that arrived in this turn of the event loop have queued too.
        if (!scheduled && !draining) {
          scheduled = true;
          setImmediate(() => void drain());
        }
      });
    },
  };
}
