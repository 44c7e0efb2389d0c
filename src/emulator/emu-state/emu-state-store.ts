/**
 * Issue 34 (state): the SQL of saving and loading the whole emulated world. It works on every table it finds in the
 * database (as `/_emu/reset` does), generically, so a table a later migration adds is saved and loaded with no change
 * here. Table and column names come from the database's own catalogue, never from a request: a document's names are
 * checked against that catalogue before any of them reaches a statement.
 */
import { sql } from 'kysely';
import type { DialectName, Tx } from '../../platform/db/connect.js';

/** How a column's values are written in a document, from its declared type. */
export type ColumnKind = 'integer' | 'number' | 'text' | 'other';

export interface ColumnInfo {
  name: string;
  kind: ColumnKind;
  notNull: boolean;
  /** Has a default (or is the autoincrement key): a document may leave it out. */
  hasDefault: boolean;
}

export interface TableInfo {
  name: string;
  columns: ColumnInfo[];
  /** The primary key's columns, in key order (rows are saved in that order); empty: ordered by every column. */
  key: string[];
}

/** The bookkeeping tables of Kysely's migrator and of SQLite itself: not part of the world. */
export const isWorldTable = (name: string) => !name.startsWith('kysely_') && !name.startsWith('sqlite_');

/** Rows inserted per statement at most: under SQLite's 32,766 and PostgreSQL's 65,535 bound parameters. */
const MAX_PARAMS = 30_000;

function kindOf(declared: string): ColumnKind {
  const t = declared.toLowerCase();
  if (/^(integer|int|int4|int8|bigint|smallint|serial|bigserial)\b/.test(t)) return 'integer';
  if (/^(double|real|float|numeric|decimal)/.test(t)) return 'number';
  if (/^(text|character|varchar|char)/.test(t)) return 'text';
  return 'other';
}

export function emuStateStore(dialect: DialectName) {
  const pg = dialect === 'postgres';

  async function tableNames(tx: Tx): Promise<string[]> {
    // The current schema only: several gpuplane databases may share one PostgreSQL, a schema each.
    const q = pg
      ? sql<{ name: string }>`select tablename as name from pg_catalog.pg_tables where schemaname = current_schema()`
      : sql<{ name: string }>`select name from sqlite_master where type = 'table'`;
    return (await q.execute(tx)).rows.map((r) => r.name).filter(isWorldTable).sort();
  }

  async function pgTables(tx: Tx, names: string[]): Promise<TableInfo[]> {
    const cols = await sql<{ table_name: string; column_name: string; data_type: string; is_nullable: string; column_default: string | null }>`
      select table_name, column_name, data_type, is_nullable, column_default from information_schema.columns
      where table_schema = current_schema() order by table_name, ordinal_position`.execute(tx);
    const keys = await sql<{ table_name: string; column_name: string }>`
      select c.relname as table_name, a.attname as column_name
      from pg_index i join pg_class c on c.oid = i.indrelid join pg_namespace n on n.oid = c.relnamespace
      cross join lateral unnest(i.indkey) with ordinality as k(attnum, ord)
      join pg_attribute a on a.attrelid = c.oid and a.attnum = k.attnum
      where i.indisprimary and n.nspname = current_schema() order by c.relname, k.ord`.execute(tx);
    return names.map((name) => ({
      name,
      columns: cols.rows.filter((c) => c.table_name === name).map((c) => ({
        name: c.column_name,
        kind: kindOf(c.data_type),
        notNull: c.is_nullable === 'NO',
        hasDefault: c.column_default !== null,
      })),
      key: keys.rows.filter((k) => k.table_name === name).map((k) => k.column_name),
    }));
  }

  async function sqliteTables(tx: Tx, names: string[]): Promise<TableInfo[]> {
    const out: TableInfo[] = [];
    for (const name of names) {
      const { rows } = await sql<{ name: string; type: string; notnull: number; dflt_value: unknown; pk: number }>`
        select name, type, "notnull", dflt_value, pk from pragma_table_info(${name})`.execute(tx);
      out.push({
        name,
        columns: rows.map((c) => ({
          name: c.name,
          kind: kindOf(c.type),
          notNull: c.notnull === 1,
          // An INTEGER PRIMARY KEY takes the next id when left out.
          hasDefault: c.dflt_value !== null || (c.pk === 1 && rows.filter((r) => r.pk > 0).length === 1 && kindOf(c.type) === 'integer'),
        })),
        key: rows.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => c.name),
      });
    }
    return out;
  }

  return {
    /** Every table of the world, by name, with its columns and key. */
    async tables(tx: Tx): Promise<TableInfo[]> {
      const names = await tableNames(tx);
      return pg ? pgTables(tx, names) : sqliteTables(tx, names);
    },

    async rows(tx: Tx, table: string): Promise<Record<string, unknown>[]> {
      return (await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(tx)).rows;
    },

    /**
     * The tables' foreign keys as (child, parent) pairs (PostgreSQL: its foreign keys are checked per statement, so
     * parents are inserted first; SQLite defers them to the commit).
     */
    async references(tx: Tx): Promise<Array<{ child: string; parent: string }>> {
      if (!pg) return [];
      const { rows } = await sql<{ child: string; parent: string }>`
        select tc.relname as child, tp.relname as parent from pg_constraint c
        join pg_class tc on tc.oid = c.conrelid join pg_class tp on tp.oid = c.confrelid
        join pg_namespace n on n.oid = tc.relnamespace
        where c.contype = 'f' and n.nspname = current_schema()`.execute(tx);
      return rows;
    },

    /** The last id each autoincrement key has handed out, by table (none yet: left out, the same on both databases). */
    async sequences(tx: Tx): Promise<Record<string, number>> {
      const out: Record<string, number> = {};
      if (pg) {
        const { rows } = await sql<{ table_name: string; last: number | string | null }>`
          select table_name, pg_sequence_last_value(pg_get_serial_sequence(quote_ident(table_name), column_name)::regclass) as last
          from information_schema.columns
          where table_schema = current_schema() and column_default like 'nextval(%'`.execute(tx);
        for (const r of rows) if (isWorldTable(r.table_name) && r.last !== null && Number(r.last) > 0) out[r.table_name] = Number(r.last);
      } else {
        const has = await sql`select 1 from sqlite_master where type = 'table' and name = 'sqlite_sequence'`.execute(tx);
        if (has.rows.length === 0) return out;
        const { rows } = await sql<{ name: string; seq: number }>`select name, seq from sqlite_sequence`.execute(tx);
        for (const r of rows) if (isWorldTable(r.name) && Number(r.seq) > 0) out[r.name] = Number(r.seq);
      }
      return out;
    },

    /** Empties every table named, in `tx` (as `/_emu/reset` does). */
    async empty(tx: Tx, tables: string[]): Promise<void> {
      if (tables.length === 0) return;
      if (pg) {
        await sql`TRUNCATE ${sql.join(tables.map((t) => sql.table(t)))} CASCADE`.execute(tx);
      } else {
        // Checked at commit, when every table is consistent again.
        await sql`PRAGMA defer_foreign_keys = ON`.execute(tx);
        for (const t of tables) await sql`DELETE FROM ${sql.table(t)}`.execute(tx);
      }
    },

    /** Inserts `rows` (each with exactly `columns`, in order) into `table`, in statements of bounded size. */
    async insert(tx: Tx, table: string, columns: string[], rows: unknown[][]): Promise<void> {
      if (rows.length === 0 || columns.length === 0) return;
      const per = Math.max(1, Math.floor(MAX_PARAMS / columns.length));
      const names = sql.join(columns.map((c) => sql.ref(c)));
      for (let i = 0; i < rows.length; i += per) {
        const values = rows.slice(i, i + per).map((r) => sql`(${sql.join(r.map((v) => sql`${v}`))})`);
        await sql`INSERT INTO ${sql.table(table)} (${names}) VALUES ${sql.join(values)}`.execute(tx);
      }
    },

    /**
     * Sets each table's autoincrement key to go on after `last` (or after the table's highest id, when higher), so
     * the next id made is the one the saved world would have made.
     */
    async setSequences(tx: Tx, last: Record<string, number>, maxIds: Record<string, number>): Promise<void> {
      if (pg) {
        const { rows } = await sql<{ table_name: string; seq: string }>`
          select table_name, pg_get_serial_sequence(quote_ident(table_name), column_name) as seq
          from information_schema.columns
          where table_schema = current_schema() and column_default like 'nextval(%'`.execute(tx);
        for (const r of rows) {
          if (!isWorldTable(r.table_name)) continue;
          const n = Math.max(last[r.table_name] ?? 0, maxIds[r.table_name] ?? 0);
          if (n > 0) await sql`select setval(${r.seq}::regclass, ${n}, true)`.execute(tx);
          else await sql`select setval(${r.seq}::regclass, 1, false)`.execute(tx);
        }
        return;
      }
      const has = await sql`select 1 from sqlite_master where type = 'table' and name = 'sqlite_sequence'`.execute(tx);
      if (has.rows.length === 0) return;
      await sql`DELETE FROM sqlite_sequence`.execute(tx);
      // Only AUTOINCREMENT tables have a counter (an INTEGER PRIMARY KEY without it takes max + 1).
      const counted = await sql<{ name: string }>`select name from sqlite_master where type = 'table' and sql like '%autoincrement%'`.execute(tx);
      for (const { name: t } of counted.rows) {
        if (!isWorldTable(t)) continue;
        const n = Math.max(last[t] ?? 0, maxIds[t] ?? 0);
        if (n > 0) await sql`INSERT INTO sqlite_sequence (name, seq) VALUES (${t}, ${n})`.execute(tx);
      }
    },
  };
}

export type EmuStateStore = ReturnType<typeof emuStateStore>;
