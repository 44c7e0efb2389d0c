/**
 * Operations: liveness, readiness (does the database answer?), the version, and the Prometheus metrics, whose
 * figures are read from the database and the process when scraped.
 */
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Clock } from '../platform/clock.js';
import { safeEqual } from '../platform/crypto.js';
import type { Store } from '../platform/db/connect.js';
import { ApiError } from '../platform/errors.js';
import type { Scheduler } from '../platform/scheduler.js';
import type { Metrics } from './ops-metrics.js';

/** Readiness fails when the database has not answered within this long (a probe's own timeout is often 1 s). */
export const READY_TIMEOUT_MS = 1000;
/** `actual_status` values always reported (0 when none), so that a state's series never vanishes. */
const INSTANCE_STATES = ['provisioning', 'loading', 'running', 'stopped', 'exited', 'unknown', 'offline'] as const;
/** The label of instances whose `actual_status` is null: the spec's "being provisioned". */
const PROVISIONING = 'provisioning';

export interface OpsDeps {
  store: Pick<Store, 'dialect' | 'connections'>;
  ping(): Promise<void>;
  clock: Clock;
  scheduler: Pick<Scheduler, 'backlog'>;
  countInstances(): Promise<{ state: string | null; count: number }[]>;
  /** Offers a search can return now. */
  offersListed(): Promise<number>;
  metrics: Metrics;
  config: Pick<Config, 'mode' | 'clock' | 'metricsToken'>;
  log: Logger;
  version: string;
  readyTimeoutMs?: number;
}

/** A short reason safe to show anyone: an error code (`ECONNREFUSED`, `SQLITE_BUSY`, `57P01`) but no message. */
function reasonOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[A-Z0-9_]{2,40}$/.test(code) ? `the query failed (${code})` : 'the query failed';
}

export function opsServiceFactory(deps: OpsDeps) {
  const { store, metrics, config, log } = deps;
  const timeoutMs = deps.readyTimeoutMs ?? READY_TIMEOUT_MS;

  const gauges = {
    info: metrics.gauge('gpuplane_info', 'Always 1; the labels say what runs', ['version', 'mode', 'clock', 'database']),
    databaseUp: metrics.gauge('gpuplane_database_up', '1 when the database answered at this scrape, else 0'),
    instances: metrics.gauge('gpuplane_instances', 'Instances not destroyed, by actual_status (provisioning: null)', ['state']),
    offers: metrics.gauge('gpuplane_offers_listed', 'Offers a search can return now'),
    backlog: metrics.gauge('gpuplane_scheduler_backlog_jobs', 'Scheduled jobs due by now and not yet run'),
    lag: metrics.gauge('gpuplane_scheduler_lag_seconds', 'Service-clock seconds since the oldest job still waiting fell due (0 when none)'),
    poolMax: metrics.gauge('gpuplane_db_pool_max_connections', 'Connections the database pool may open (SQLite: 1)'),
    poolTotal: metrics.gauge('gpuplane_db_pool_connections', 'Database connections open'),
    poolIdle: metrics.gauge('gpuplane_db_pool_idle_connections', 'Database connections open and idle (SQLite: 0 while a transaction is open)'),
  };
  // SQLite's one connection is queued for inside Kysely, out of sight: no figure rather than a false 0.
  const poolWaiting = store.dialect === 'postgres' ? metrics.gauge('gpuplane_db_pool_waiting_queries', 'Queries waiting for a database connection') : undefined;
  gauges.info.set({ version: deps.version, mode: config.mode, clock: config.clock, database: store.dialect }, 1);

  /** The ping, or a rejection once `timeoutMs` has passed: a hung pool must not hang the probe. */
  async function pingWithin(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new ApiError('service_unavailable', `database unavailable: no answer within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([deps.ping(), timeout]);
    } catch (err) {
      if (err instanceof ApiError) throw err;
      log.warn({ err }, 'readiness: the database did not answer');
      throw new ApiError('service_unavailable', `database unavailable: ${reasonOf(err)}`);
    } finally {
      clearTimeout(timer);
    }
  }

  async function readDatabaseFigures(): Promise<void> {
    const counts = await deps.countInstances();
    gauges.instances.reset();
    for (const state of INSTANCE_STATES) gauges.instances.set({ state }, 0);
    for (const { state, count } of counts) gauges.instances.set({ state: state ?? PROVISIONING }, count);
    gauges.offers.set({}, await deps.offersListed());
    const { due, oldestDueAt } = await deps.scheduler.backlog();
    gauges.backlog.set({}, due);
    gauges.lag.set({}, oldestDueAt === null ? 0 : Math.max(0, deps.clock.now() - oldestDueAt));
  }

  // Issue 34 item 6: start-up work that runs after the server listens (the emulator's init scripts) holds readiness
  // until it is done: each hold is a reason `/readyz` gives in its 503, and `whenReady` resolves once none is left.
  const holds = new Map<number, string>();
  let nextHold = 0;
  let readyWaiters: (() => void)[] = [];
  /** Facts about the start-up reported with a 200 (e.g. `emulator_init`: which init scripts failed). */
  const readyDetails: Record<string, unknown> = {};

  return {
    health: () => ({ success: true as const, status: 'up' as const }),

    /** Readiness answers 503 with `reason` until the returned release is called (once; later calls do nothing). */
    holdReadiness(reason: string): () => void {
      const id = nextHold++;
      holds.set(id, reason);
      return () => {
        if (!holds.delete(id) || holds.size) return;
        const waiters = readyWaiters;
        readyWaiters = [];
        for (const w of waiters) w();
      };
    },

    /** Resolves once no start-up work holds readiness (at once when none does). */
    whenReady(): Promise<void> {
      return holds.size ? new Promise((resolve) => readyWaiters.push(resolve)) : Promise.resolve();
    },

    /** Adds a fact to the ready reply, under `name` (a field of ReadyReply). */
    setReadyDetail(name: 'emulator_init', value: unknown): void {
      readyDetails[name] = value;
    },

    version: () => ({ success: true as const, version: deps.version }),

    async readiness() {
      const held = [...holds.values()];
      if (held.length) throw new ApiError('service_unavailable', `not ready yet: ${held.join('; ')}`);
      await pingWithin();
      return { success: true as const, status: 'ready' as const, version: deps.version, database: store.dialect, ...readyDetails };
    },

    /** With GPUPLANE_METRICS_TOKEN set, the scrape must present it as a Bearer token. */
    authorizeMetrics(authorization: string | undefined): void {
      const token = config.metricsToken;
      if (token === undefined) return;
      const presented = /^Bearer (.+)$/.exec(authorization ?? '')?.[1];
      if (presented === undefined || !safeEqual(presented, token)) {
        throw new ApiError('auth_error', 'GET /metrics needs Authorization: Bearer <GPUPLANE_METRICS_TOKEN>', {}, undefined, {
          'www-authenticate': 'Bearer realm="metrics"',
        });
      }
    },

    /** The exposition text. When the database does not answer, its figures are left out and gpuplane_database_up is 0. */
    async metricsText(): Promise<string> {
      const use = store.connections();
      gauges.poolMax.set({}, use.max);
      gauges.poolTotal.set({}, use.total);
      gauges.poolIdle.set({}, use.idle);
      if (use.waiting !== undefined) poolWaiting?.set({}, use.waiting);
      try {
        await pingWithin();
        await readDatabaseFigures();
        gauges.databaseUp.set({}, 1);
      } catch (err) {
        if (!(err instanceof ApiError)) log.warn({ err }, 'metrics: a database figure could not be read');
        gauges.databaseUp.set({}, 0);
        // Unknown, not zero.
        gauges.instances.reset();
        for (const g of [gauges.offers, gauges.backlog, gauges.lag]) g.set({}, Number.NaN);
      }
      return metrics.text();
    },

    contentType: metrics.contentType,
  };
}

export type OpsService = ReturnType<typeof opsServiceFactory>;
