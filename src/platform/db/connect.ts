import { Kysely, SqliteDialect, type Transaction } from 'kysely';
import SQLite from 'better-sqlite3';
import { LRUCache } from 'lru-cache';
import pg from 'pg';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { availableParallelism } from 'node:os';
import type { Database } from './schema.js';
import { migrate, type DialectName, type MigrationList } from './migrations.js';
import { SchemaScopedPostgresDialect } from './pg-introspector.js';
import { nameStatements } from './pg-named.js';
import { listen, type Listener, type ListenOptions } from './listen.js';

export type { DialectName };
export type Db = Kysely<Database>;
/** A store function's optional transaction (Infisical's `tx || db`). */
export type Tx = Kysely<Database> | Transaction<Database>;

export interface Store {
  db: Db;
  dialect: DialectName;
  /**
   * SQLite only: a number that grows whenever the data may have changed: a write by this process, or a commit by any
   * other connection to the file (`PRAGMA data_version`). While it stays the same, a read gives the same rows, so a
   * hot read may be reused (platform/db/read-cache.ts). PostgreSQL has none: other processes write without notice.
   */
  version?: () => number;
  /**
   * PostgreSQL only: notifications of `channel` (listen.ts), on a connection of their own. SQLite has none: one
   * process owns the file, and `version` tells it of other connections' commits.
   */
  listen?: (channel: string, on: Pick<ListenOptions, 'onPayload' | 'onGap' | 'warn'>) => Promise<Listener>;
  /**
   * PostgreSQL only: a second, small pool (BACKGROUND_POOL_SIZE) where the scheduler runs its jobs' transactions, so
   * that due work never waits for a connection behind requests. SQLite has one connection: `db`.
   */
  background?: Db;
  /** Connections now, for metrics. */
  connections(): ConnectionUse;
  close(): Promise<void>;
}

/**
 * PostgreSQL: the pool's connections, those idle, and the queries waiting for one. SQLite has one connection, busy
 * while a transaction is open; what waits for it is not known (`waiting` undefined).
 */
export interface ConnectionUse {
  max: number;
  total: number;
  idle: number;
  waiting: number | undefined;
}

export interface OpenOptions {
  /** The database's migrations (the composition root's list, src/database.ts), applied on open. */
  migrations: MigrationList;
  /** PostgreSQL schema to use (created if missing); tests give each app its own. */
  pgSchema?: string;
  /** PostgreSQL connections at most (config `pgPoolSize`). @default defaultPoolSize() */
  pgPoolSize?: number;
  /** SQLite commit durability (config `sqliteSync`). @default 'normal' */
  sqliteSync?: 'normal' | 'full';
}

// bigint (COUNT, money) and numeric (SUM) come back from pg as strings; amounts here are integer micro-dollars
// well inside 2^53, so numbers are exact.
const pgTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === 20 || oid === 1700) return (v: string) => Number(v);
    return pg.types.getTypeParser(oid, format as 'text');
  },
} as pg.CustomTypesConfig;

export async function openStore(url: string, options: OpenOptions): Promise<Store> {
  if (url.startsWith('sqlite:')) return openSqlite(url.slice('sqlite:'.length), options);
  return openPostgres(url, options);
}

async function openSqlite(path: string, options: OpenOptions): Promise<Store> {
  const sqliteSync = options.sqliteSync ?? 'normal';
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const sqlite = new SQLite(path);
  sqlite.pragma('journal_mode = WAL');
  // In WAL mode a commit is written to the log before it is acknowledged, so a killed process (SIGKILL) loses
  // nothing with NORMAL. FULL also fsyncs the log on every commit, so a power cut loses nothing either, at several
  // milliseconds per commit (GPUPLANE_SQLITE_SYNC).
  sqlite.pragma(`synchronous = ${sqliteSync === 'full' ? 'FULL' : 'NORMAL'}`);
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('foreign_keys = ON');
  // Prepared before the statement cache is in place: this one is never handed to Kysely.
  const dataVersion = sqlite.prepare('PRAGMA data_version').pluck();
  const writes = cachePreparedStatements(sqlite);
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
  await migrate(db, 'sqlite', options.migrations);
  // Both parts only grow, so their sum changes whenever either does. This process's writes are counted as they
  // happen; other connections' commits (`PRAGMA data_version`, a read transaction: two fcntl locks and a stat, the
  // costliest part of a cached key lookup) are read once per turn of the event loop. Every request handled in a turn
  // arrived before its first read, so each still sees every commit made before it arrived.
  let othersSeen: number | undefined;
  const forgetOthers = () => {
    othersSeen = undefined;
  };
  const others = (): number => {
    if (othersSeen === undefined) {
      othersSeen = dataVersion.get() as number;
      setImmediate(forgetOthers);
    }
    return othersSeen;
  };
  const version = () => writes.count + others();
  const connections = (): ConnectionUse => ({ max: 1, total: 1, idle: sqlite.inTransaction ? 0 : 1, waiting: undefined });
  return { db, dialect: 'sqlite', version, connections, close: () => db.destroy() };
}

/**
 * Distinct SQL texts kept prepared, the least recently used dropped past it; the queries of the code are a fixed,
 * small set, so this is never reached.
 */
const STATEMENT_CACHE_SIZE = 2000;

/**
 * Kysely prepares every query anew, and with better-sqlite3 preparing costs more than running a simple indexed
 * query (the key lookup of every request). Statements are reused by their SQL text; one still running (an iterator)
 * is not shared.
 *
 * Kysely prepares a statement each time it runs one, so this also counts the statements that may write (`count`,
 * for `Store.version`): counted as they are prepared, before they run, so a read that starts after a write began never
 * takes the old count.
 */
function cachePreparedStatements(sqlite: SQLite.Database): { count: number } {
  const writes = { count: 0 };
  const prepare = sqlite.prepare.bind(sqlite);
  const cache = new LRUCache<string, SQLite.Statement>({ max: STATEMENT_CACHE_SIZE });
  sqlite.prepare = ((source: string) => {
    const stmt = preparedFor(source);
    if (!stmt.readonly) writes.count++;
    return stmt;
  }) as typeof sqlite.prepare;
  return writes;

  function preparedFor(source: string): SQLite.Statement {
    const cached = cache.get(source);
    if (cached && !cached.busy) return cached;
    const stmt = prepare(source);
    if (!cached) cache.set(source, stmt);
    return stmt;
  }
}

/**
 * PostgreSQL connections for the scheduler's jobs (`Store.background`), beside the pool: due work does not queue for
 * a connection behind the requests (bench pg-clock under load: a job waited about 5 ms for one).
 */
export const BACKGROUND_POOL_SIZE = 2;

/**
 * Twice the CPU cores, at least 4. Was 10 whatever the machine: three processes on a 2-core machine kept 30
 * backends busy, which queued for the CPU with their locks held (pg-mixed, 3 processes, 3 rounds each: pool 10
 * 0.37–0.46× the SQLite rate, pool 4 0.41–0.51×; docs/PERFORMANCE.md).
 */
export function defaultPoolSize(): number {
  return Math.max(4, 2 * availableParallelism());
}

async function openPostgres(url: string, options: OpenOptions): Promise<Store> {
  if (options.pgSchema) {
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      await admin.query(`CREATE SCHEMA IF NOT EXISTS "${options.pgSchema}"`);
    } finally {
      await admin.end();
    }
  }
  const max = options.pgPoolSize ?? defaultPoolSize();
  const schemaOption = options.pgSchema ? `-c search_path="${options.pgSchema}"` : undefined;
  const open = (size: number) => {
    const pool = new pg.Pool({ connectionString: url, max: size, types: pgTypes, ...(schemaOption ? { options: schemaOption } : {}) });
    return { pool, named: nameStatements(pool), db: new Kysely<Database>({ dialect: new SchemaScopedPostgresDialect({ pool }) }) };
  };
  const { pool, named, db } = open(max);
  // A database that cannot be reached fails here, at the first query: close the pool, or its sockets keep the
  // process alive after the error is reported.
  await migrate(db, 'postgres', options.migrations).catch(async (err) => {
    await db.destroy().catch(() => undefined);
    throw err;
  });
  named.enable();
  const background = open(BACKGROUND_POOL_SIZE);
  background.named.enable();
  const connections = (): ConnectionUse => ({ max, total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount });
  // Listeners live as long as the store: closing it ends them, so none keeps the process alive.
  const listeners = new Set<Listener>();
  const listenOn: Store['listen'] = async (channel, on) => {
    const l = await listen({ connectionString: url, options: schemaOption, channel, ...on });
    const own: Listener = { close: async () => void (listeners.delete(own), await l.close()) };
    listeners.add(own);
    return own;
  };
  const close = async () => {
    await Promise.all([...listeners].map((l) => l.close()));
    await Promise.all([db.destroy(), background.db.destroy()]);
  };
  return { db, background: background.db, dialect: 'postgres', listen: listenOn, connections, close };
}
