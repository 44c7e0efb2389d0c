/**
 * Rows given by the caller as a table of the statement (`… FROM ${rowsTable(rows, columns)} AS v WHERE t.id = v.id`),
 * so that one statement updates many rows, each with its own values: on PostgreSQL every statement is a round trip,
 * and a set-based step writes what many single-row statements did (`UPDATE … FROM (VALUES …)`). The same SQL runs on
 * both dialects: VALUES names its columns column1, column2 … on both, renamed here; every value is cast, so
 * PostgreSQL knows each column's type, and the type names give SQLite the same affinities.
 */
import { sql, type RawBuilder } from 'kysely';

/** Types a `rowsTable` column can have (names both dialects read alike). */
export type ValuesType = 'integer' | 'bigint' | 'double precision' | 'text';

/** `(SELECT … FROM (VALUES …))`: the rows as a subquery with the columns named, each cast to its type. Not empty. */
export function rowsTable<R extends Record<string, unknown>>(rows: readonly R[], columns: { [K in keyof R & string]: ValuesType }): RawBuilder<R> {
  if (rows.length === 0) throw new Error('rowsTable needs at least one row');
  const names = Object.keys(columns) as (keyof R & string)[];
  const values = rows.map((r) => sql`(${sql.join(names.map((n) => sql`CAST(${r[n] ?? null} AS ${sql.raw(columns[n])})`))})`);
  const renamed = names.map((n, i) => sql`${sql.ref(`column${i + 1}`)} AS ${sql.ref(n)}`);
  return sql<R>`(SELECT ${sql.join(renamed)} FROM (VALUES ${sql.join(values)}) AS t)`;
}
