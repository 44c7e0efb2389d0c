/**
 * Test harness: builds the real app (as main.ts does) on SQLite in memory, and on PostgreSQL when
 * GPUPLANE_TEST_POSTGRES_URL is set, each app in a schema of its own. A virtual clock; silent logs.
 */
import { describe, before, after } from 'node:test';
import pg from 'pg';
import { pino, type Logger } from 'pino';
import type { LightMyRequestResponse } from 'fastify';
import { buildApp, type Built } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import { VirtualClock } from '../../src/platform/clock.js';
import { SecretBox } from '../../src/platform/crypto.js';
import type { DialectName, Store } from '../../src/platform/db/connect.js';
import { openDatabase } from '../../src/database.js';
import { cryptoRandom } from '../../src/platform/random.js';
import { EMU_OWNER_CREDIT } from '../../src/users/users-service.js';

export const PG_URL = process.env.GPUPLANE_TEST_POSTGRES_URL;
export const DIALECTS: DialectName[] = PG_URL ? ['sqlite', 'postgres'] : ['sqlite'];
/**
 * The PostgreSQL URL, for a test that exists for PostgreSQL alone (several processes on one database, its locks, its
 * plans). Without GPUPLANE_TEST_POSTGRES_URL it throws, so the test fails naming the variable: tests never skip, and a
 * run that cannot reach its real dependency must not pass as if it had.
 */
export function requirePostgres(): string {
  if (!PG_URL) {
    throw new Error('this test runs on PostgreSQL alone and GPUPLANE_TEST_POSTGRES_URL is not set: set it, e.g. GPUPLANE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test');
  }
  return PG_URL;
}
/** Where every test's virtual clock starts (2027-01-15T08:00:00Z). */
export const T0 = 1_800_000_000;
export const OWNER_KEY = 'gpk_test_owner_key_0123456789abcdef';

let schemaCounter = 0;
export function uniqueSchema(): string {
  return `gpt_${process.pid}_${Date.now().toString(36)}_${schemaCounter++}`;
}

export async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: requirePostgres() });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

export interface Reply<T = any> {
  status: number;
  body: T;
  headers: LightMyRequestResponse['headers'];
  raw: string;
}

export interface RequestOptions {
  /** API key sent as Bearer; `null` sends none. Default: the owner's key. */
  key?: string | null;
  body?: unknown;
  headers?: Record<string, string>;
  query?: Record<string, string>;
}

export interface TestApp extends Built {
  dialect: DialectName;
  store: Store;
  clock: VirtualClock;
  config: Config;
  ownerKey: string;
  request<T = any>(method: string, url: string, options?: RequestOptions): Promise<Reply<T>>;
  /** Creates a user through the emulator API: `{user, api_key}`. */
  createUser(body?: Record<string, unknown>): Promise<{ user: any; api_key: string }>;
  /** Advances the virtual clock through the emulator API, running due work. */
  advance(seconds: number): Promise<void>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  config?: Partial<Record<string, string>>;
  log?: Logger;
  /** PostgreSQL: the schema to use, shared with another app (several processes on one database); not dropped by close. */
  pgSchema?: string;
}

let userCounter = 0;

/** Builds an app on `dialect`. Config overrides use the env var names (e.g. `GPUPLANE_MODE`). */
export async function createTestApp(dialect: DialectName, options: TestAppOptions = {}): Promise<TestApp> {
  const schema = dialect === 'postgres' && !options.pgSchema ? uniqueSchema() : undefined;
  const config = loadConfig({
    GPUPLANE_DATABASE_URL: dialect === 'postgres' ? requirePostgres() : 'sqlite::memory:',
    GPUPLANE_CLOCK: 'virtual',
    GPUPLANE_CLOCK_START: String(T0),
    GPUPLANE_BOOTSTRAP_API_KEY: OWNER_KEY,
    GPUPLANE_SECRET_KEY: 'test-secret-key-0123456789',
    GPUPLANE_LOG_LEVEL: 'silent',
    GPUPLANE_SIM_MACHINES: '20',
    GPUPLANE_PORT: '0',
    ...options.config,
  });
  const store = await openDatabase(config.databaseUrl, { pgSchema: options.pgSchema ?? schema, pgPoolSize: 5 });
  const clock = new VirtualClock(config.clockStart!);
  const log = options.log ?? pino({ level: 'silent' });
  const built = await buildApp({ config, store, clock, random: cryptoRandom, log, secretBox: new SecretBox(config.secretKey!, cryptoRandom) });
  await built.services.users.ensureOwner(config.bootstrapApiKey, EMU_OWNER_CREDIT);
  await built.services.onStart?.();

  const request = async (method: string, url: string, opts: RequestOptions = {}): Promise<Reply> => {
    const headers: Record<string, string> = { ...opts.headers };
    const key = opts.key === undefined ? OWNER_KEY : opts.key;
    if (key !== null) headers.authorization = `Bearer ${key}`;
    let payload: string | undefined;
    if (opts.body !== undefined) {
      payload = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await built.app.inject({ method: method as any, url, headers, payload, query: opts.query });
    let body: unknown = res.body;
    try {
      body = JSON.parse(res.body);
    } catch {
      /* not JSON: keep the text */
    }
    return { status: res.statusCode, body, headers: res.headers, raw: res.body };
  };

  const t: TestApp = {
    ...built,
    dialect,
    store,
    clock,
    config,
    ownerKey: OWNER_KEY,
    request,
    async createUser(body = {}) {
      const res = await request('POST', '/_emu/users', { body: { email: `user${process.pid}_${userCounter++}@example.com`, ...body } });
      if (res.status !== 200) throw new Error(`createUser failed: ${res.status} ${res.raw}`);
      return res.body;
    },
    async advance(seconds: number) {
      const res = await request('POST', '/_emu/clock/advance', { body: { seconds } });
      if (res.status !== 200) throw new Error(`advance failed: ${res.status} ${res.raw}`);
    },
    async close() {
      await built.scheduler.stop();
      await built.app.close();
      await store.close();
      if (schema) await dropSchema(schema);
    },
  };
  return t;
}

/**
 * Runs `fn` once per dialect, inside a describe named after it, with a fresh app built before and closed after.
 * `fn` receives a getter for the app.
 */
export function forEachDialect(name: string, fn: (app: () => TestApp, dialect: DialectName) => void, options: TestAppOptions = {}): void {
  for (const dialect of DIALECTS) {
    describe(`${name} [${dialect}]`, () => {
      let t: TestApp | undefined;
      before(async () => {
        t = await createTestApp(dialect, options);
      });
      after(async () => {
        await t?.close();
      });
      fn(() => {
        if (!t) throw new Error('app not built');
        return t;
      }, dialect);
    });
  }
}
