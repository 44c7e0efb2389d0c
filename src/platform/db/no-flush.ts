import { sql, type RawBuilder } from 'kysely';
import type { DialectName, Tx } from './connect.js';

/**
 * Bookkeeping writes that commit without waiting for the disk, on PostgreSQL: an audit entry, a key's last use, a
 * client address. Each is a statement of its own (no caller's transaction), written after the action it records,
 * and losing one costs nothing that matters.
 *
 * PostgreSQL waits for every commit's WAL record to reach the disk (`synchronous_commit = on`, its default), and
 * these made up more than half of the commits of the mixed load (bench pg-mixed: 0.5 of 0.86 per request); on these
 * machines a flush costs ~120 µs. With `synchronous_commit` off for the statement's own transaction, its record
 * reaches the disk with the next flush: the next durable commit of any writer (WAL is written in order), or the WAL
 * writer within `wal_writer_delay` (200 ms by default). Only a crash of the database server in that window loses
 * it, never consistency; a crash of gpuplane loses nothing. Other sessions see the row as soon as it commits.
 *
 * SQLite needs none: its commits do not wait for the disk unless `GPUPLANE_SQLITE_SYNC=full`, which these keep.
 */

/** A FROM item whose one effect is `synchronous_commit = off` until the end of the statement's own transaction. */
export const NO_FLUSH: RawBuilder<unknown> = sql`(SELECT set_config('synchronous_commit', 'off', true)) AS no_flush`;

/**
 * Whether a bookkeeping statement run on `tx` takes NO_FLUSH. Not on SQLite, and not inside a transaction, whose other
 * writes it would also stop waiting for: there it is written plainly.
 */
export function flushWaived(tx: Tx, dialect: DialectName): boolean {
  return dialect === 'postgres' && !tx.isTransaction;
}
