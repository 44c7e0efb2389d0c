/**
 * What the PostgreSQL benchmarks share: a fresh database per run on the server named by
 * `GPUPLANE_BENCH_POSTGRES_URL` (else `GPUPLANE_TEST_POSTGRES_URL`, else the local default), a simulated fleet and
 * instances put in place through the API, the statements the database ran (pg_stat_statements when the server loads
 * it), and a process's resident memory.
 */
import { existsSync, readFileSync } from 'node:fs';
import pg from 'pg';
import type { BenchContext } from './lib.js';

const DEFAULT_URL = 'postgres://postgres@127.0.0.1:5432/test';

export function benchPostgresUrl(): string {
  return process.env.GPUPLANE_BENCH_POSTGRES_URL ?? process.env.GPUPLANE_TEST_POSTGRES_URL ?? DEFAULT_URL;
}

export interface BenchDatabase {
  url: string;
  drop(): Promise<void>;
}

/** Where Debian's PostgreSQL listens on its Unix socket (`unix_socket_directories`). */
const SOCKET_DIR = '/var/run/postgresql';

/**
 * The URL the measured servers use: a database on this machine (127.0.0.1, localhost) through its Unix socket when
 * it has one, as the README advises for a database on the same host. A socket carries a statement's round trip for
 * less CPU than loopback TCP, which goes through the whole TCP/IP stack (and netfilter, with Docker's rules loaded),
 * on both sides. pg-mixed, alternating 10 s runs of its PostgreSQL side on 2 cores: 762–876 req/s through the socket,
 * 739–803 over TCP. `GPUPLANE_BENCH_PG_TCP=1` keeps TCP.
 */
export function serverUrl(u: URL): string {
  const port = u.port || '5432';
  const local = u.hostname === '127.0.0.1' || u.hostname === 'localhost' || u.hostname === '[::1]';
  if (!local || process.env.GPUPLANE_BENCH_PG_TCP || !existsSync(`${SOCKET_DIR}/.s.PGSQL.${port}`)) return u.toString();
  const socket = new URL(u.toString());
  socket.hostname = 'localhost';
  socket.searchParams.set('host', SOCKET_DIR);
  return socket.toString();
}

/** Creates an empty database for one measurement (dropped afterwards), so runs never see each other's rows. */
export async function createBenchDatabase(ctx: BenchContext, label: string): Promise<BenchDatabase> {
  const admin = benchPostgresUrl();
  const name = `gpuplane_bench_${label}_${process.pid}_${Date.now() % 1e8}`;
  await withClient(admin, (c) => c.query(`CREATE DATABASE "${name}"`));
  const u = new URL(admin);
  u.pathname = `/${name}`;
  const url = serverUrl(u);
  ctx.log(`  PostgreSQL database ${name} on ${u.host}${url.includes('host=') ? `, through its Unix socket (${SOCKET_DIR})` : ', over TCP'}`);
  return {
    url,
    drop: () =>
      withClient(admin, (c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(
        () => undefined,
        () => undefined,
      ),
  };
}

async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/**
 * Statements the database ran between `reset()` and `read()`: from pg_stat_statements when the server preloads it
 * (`shared_preload_libraries`), else the transaction count of pg_stat_database (commits + rollbacks), which every
 * server keeps. `top` lists the statements with the most calls (pg_stat_statements only).
 */
export interface StatementCount {
  source: 'pg_stat_statements' | 'pg_stat_database';
  statements: number | null;
  transactions: number;
  top: Array<{ calls: number; ms: number; query: string }>;
}

export async function statementCounter(url: string): Promise<{ reset(): Promise<void>; read(): Promise<StatementCount> }> {
  const dbName = new URL(url).pathname.slice(1);
  const hasPss = await withClient(url, async (c) => {
    try {
      await c.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
      await c.query('SELECT 1 FROM pg_stat_statements LIMIT 1');
      return true;
    } catch {
      return false;
    }
  });
  const xacts = (c: pg.Client) =>
    c.query('SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = $1', [dbName]).then((r) => Number(r.rows[0].n));
  let xactsAtReset = 0;
  return {
    async reset() {
      await withClient(url, async (c) => {
        // This database's statements only: another run (or helper) may be counting its own meanwhile.
        if (hasPss) await c.query('SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database WHERE datname = $1), 0)', [dbName]);
        // The cumulative statistics are read as of the transaction's start unless cleared.
        await c.query('SELECT pg_stat_clear_snapshot()');
        xactsAtReset = await xacts(c);
      });
    },
    async read() {
      // Statistics reach the shared view at most once a second (PostgreSQL 15).
      await new Promise((r) => setTimeout(r, 1100));
      return withClient(url, async (c) => {
        const transactions = (await xacts(c)) - xactsAtReset;
        if (!hasPss) return { source: 'pg_stat_database' as const, statements: null, transactions, top: [] };
        const r = await c.query(
          `SELECT calls, total_exec_time AS ms, query FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
           WHERE d.datname = $1 AND query NOT LIKE '%pg\\_stat\\_%' ORDER BY calls DESC`,
          [dbName],
        );
        const statements = r.rows.reduce((n, row) => n + Number(row.calls), 0);
        // GPUPLANE_BENCH_TOP: how many of the commonest statements to list (default 40).
        const top = r.rows.slice(0, Number(process.env.GPUPLANE_BENCH_TOP ?? 40)).map((row) => ({ calls: Number(row.calls), ms: Math.round(Number(row.ms)), query: String(row.query).replace(/\s+/g, ' ').slice(0, 140) }));
        return { source: 'pg_stat_statements' as const, statements, transactions, top };
      });
    },
  };
}

/** Resident memory of a process in MB (Linux /proc). */
export const rssMb = (pid: number): number => Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024);

export interface Fleet {
  /** Offer ids of 1-GPU offers, one entry per rentable GPU, interleaved across machines. */
  offers: number[];
}

/** Offer id of a machine's 1-GPU bundle (machines-offers-contract.ts: machine id × 100 + GPUs). */
const OFFER_ID_STRIDE = 100;

async function api(url: string, key: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

/** Adds `machines` simulated machines of `gpus` GPUs each through `POST /_emu/machines`. */
export async function addMachines(url: string, key: string, machines: number, gpus: number): Promise<Fleet> {
  const ids: number[] = [];
  for (let i = 0; i < machines; i++) {
    const { machine_id } = await api(url, key, 'POST', '/_emu/machines', { num_gpus: gpus, price_gpu: 0.01, price_disk: 0.01 });
    ids.push(machine_id);
  }
  // Round-robin over the machines, so that renters taking offers in turn rent on different machines.
  return { offers: Array.from({ length: gpus }, () => ids.map((id) => id * OFFER_ID_STRIDE + 1)).flat() };
}

export const RENT_BODY = { image: 'pytorch/pytorch:latest', disk: 10, runtype: 'ssh_direc ssh_proxy' };

/** Rents one instance of `offer`; its id. */
/** Rents the offer (RENT_BODY, with `image` in place of its image when given); the new instance's id. */
export async function rent(url: string, key: string, offer: number, image?: string): Promise<number> {
  const reply = await api(url, key, 'PUT', `/api/v0/asks/${offer}/`, image ? { ...RENT_BODY, image } : RENT_BODY);
  return reply.new_contract as number;
}

export { api };
