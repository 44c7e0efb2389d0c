import { sql } from 'kysely';
import { ApiError } from '../errors.js';
import type { Tx } from './connect.js';

/**
 * Runs `fn` inside a savepoint of the caller's transaction: when it fails with an ApiError (a refused rent, say), only
 * its own writes roll back, and the error is returned for the caller to record; any other error rolls back and throws.
 * A job that rents or destroys on someone's behalf keeps its other work (the serverless autoscaler, default jobs).
 */
export async function inSavepoint<T>(tx: Tx, fn: () => Promise<T>): Promise<T | ApiError> {
  await sql.raw('SAVEPOINT attempt').execute(tx);
  try {
    const out = await fn();
    await sql.raw('RELEASE attempt').execute(tx);
    return out;
  } catch (err) {
    await sql.raw('ROLLBACK TO attempt').execute(tx);
    await sql.raw('RELEASE attempt').execute(tx);
    if (err instanceof ApiError) return err;
    throw err;
  }
}
