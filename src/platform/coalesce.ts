/**
 * Group commit for small, frequent statements (10,000 agents' heartbeats): a call made while `maxInFlight` batches are
 * running waits and goes with every other waiting call in the next batch, one statement for all. An idle server runs
 * each call at once (no window, no added latency); a loaded one batches more the more it is loaded, so the database
 * sees a few statements and commits where it would see one per call.
 */
export interface CoalesceOptions {
  /** Calls in one batch at most; more wait for the next. */
  maxBatch: number;
  /** Batches running at once (each holds a database connection while it runs). */
  maxInFlight: number;
}

/**
 * Wraps `run`, which takes a batch of inputs and gives one output per input, in order. A batch that fails fails
 * every call in it with the same error.
 */
export function coalescing<I, O>(run: (items: I[]) => Promise<O[]>, opts: CoalesceOptions): (item: I) => Promise<O> {
  let queue: { item: I; resolve(o: O): void; reject(e: unknown): void }[] = [];
  let inFlight = 0;

  function next(): void {
    while (inFlight < opts.maxInFlight && queue.length > 0) {
      const batch = queue.slice(0, opts.maxBatch);
      queue = queue.slice(batch.length);
      inFlight++;
      void (async () => {
        try {
          const out = await run(batch.map((b) => b.item));
          batch.forEach((b, i) => b.resolve(out[i]));
        } catch (err) {
          for (const b of batch) b.reject(err);
        } finally {
          inFlight--;
          next();
        }
      })();
    }
  }

  return (item) =>
    new Promise<O>((resolve, reject) => {
      queue.push({ item, resolve, reject });
      // After the calls of this tick have queued: they go in one batch when nothing is running.
      if (queue.length === 1) queueMicrotask(next);
    });
}
