import type { Insertable, Selectable } from 'kysely';
import type { Tx } from '../platform/db/connect.js';
import type { BenchmarksTable } from './benchmarks-tables.js';

export type BenchmarkRow = Selectable<BenchmarksTable>;

export function benchmarksStore(db: Tx) {
  return {
    async insert(row: Insertable<BenchmarksTable>, tx: Tx = db): Promise<number> {
      return (await tx.insertInto('benchmarks').values(row).returning('id').executeTakeFirstOrThrow()).id;
    },
    /** Every result (the search filters in memory with the offers' filter language). */
    async all(tx: Tx = db): Promise<BenchmarkRow[]> {
      const rows = await tx.selectFrom('benchmarks').selectAll().orderBy('id').execute();
      return rows.map((r) => ({ ...r, value: Number(r.value), last_update: Number(r.last_update) }));
    },
  };
}
