// Operations routes (issue 11, items 18 and 19): liveness, readiness, the version, and the Prometheus metrics.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import { createTestApp, DIALECTS, forEachDialect, type TestApp } from './helpers/harness.js';
import { addMachine, offerFor, rentOk, BOOT_MAX_S } from './instances-fixtures.js';
import { Metrics } from '../src/ops/ops-metrics.js';
import { opsServiceFactory } from '../src/ops/ops-service.js';
import { VirtualClock } from '../src/platform/clock.js';
import { ApiError } from '../src/platform/errors.js';
import { parseExposition, valueOf, type Sample } from './helpers/metrics.js';

const VERSION = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version;

async function scrape(t: TestApp): Promise<Sample[]> {
  const res = await t.request('GET', '/metrics', { key: null });
  assert.equal(res.status, 200, res.raw);
  assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
  return parseExposition(res.raw);
}

async function offersInSearch(t: TestApp): Promise<number> {
  const res = await t.request('POST', '/api/v0/bundles/', { body: { limit: 1000 } });
  assert.equal(res.status, 200, res.raw);
  return res.body.offers.length;
}

forEachDialect('ops probes', (app, dialect) => {
  test('GET /healthz: up, with no key', async () => {
    const res = await app().request('GET', '/healthz', { key: null });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { success: true, status: 'up' });
  });

  test('GET /readyz: ready when the database answers, with the version and the database, no key', async () => {
    const res = await app().request('GET', '/readyz', { key: null });
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body, { success: true, status: 'ready', version: VERSION, database: dialect });
  });

  test("GET /api/v0/version/: package.json's version, no key", async () => {
    const res = await app().request('GET', '/api/v0/version/', { key: null });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { success: true, version: VERSION });
  });
});

for (const dialect of DIALECTS) {
  test(`[${dialect}] a closed database: /readyz 503 service_unavailable with the reason; /healthz and /metrics still answer`, async () => {
    const t = await createTestApp(dialect);
    try {
      await t.store.db.destroy();
      const ready = await t.request('GET', '/readyz', { key: null });
      assert.equal(ready.status, 503, ready.raw);
      assert.deepEqual(ready.body, { success: false, error: 'service_unavailable', msg: 'database unavailable: the query failed' });
      assert.deepEqual((await t.request('GET', '/healthz', { key: null })).body, { success: true, status: 'up' });

      const samples = await scrape(t);
      assert.equal(valueOf(samples, 'gpuplane_database_up'), 0);
      assert.ok(Number.isNaN(valueOf(samples, 'gpuplane_offers_listed')), 'unknown, not 0');
      assert.equal(valueOf(samples, 'gpuplane_instances', { state: 'running' }), undefined);
      assert.ok(valueOf(samples, 'process_cpu_user_seconds_total')! >= 0, 'process metrics are still served');
    } finally {
      await t.close().catch(() => undefined);
    }
  });
}

test('readiness gives up on a database that does not answer within its timeout', async () => {
  const metrics = new Metrics();
  const ops = opsServiceFactory({
    store: { dialect: 'sqlite', connections: () => ({ max: 1, total: 1, idle: 1, waiting: undefined }) },
    ping: () => new Promise<void>(() => undefined),
    clock: new VirtualClock(0),
    scheduler: { backlog: async () => ({ due: 0, oldestDueAt: null }) },
    countInstances: async () => [],
    offersListed: async () => 0,
    metrics,
    config: { mode: 'emulator', clock: 'virtual', metricsToken: undefined },
    log: pino({ level: 'silent' }),
    version: VERSION,
    readyTimeoutMs: 5,
  });
  await assert.rejects(ops.readiness(), (err: unknown) => {
    assert.ok(err instanceof ApiError);
    assert.equal(err.status, 503);
    assert.deepEqual(err.body(), { success: false, error: 'service_unavailable', msg: 'database unavailable: no answer within 5 ms' });
    return true;
  });
});

forEachDialect('ops metrics', (app, dialect) => {
  test('GET /metrics: the text format, open when GPUPLANE_METRICS_TOKEN is unset, with the process metrics', async () => {
    const samples = await scrape(app());
    for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes']) {
      assert.ok(samples.some((s) => s.name === name), `${name} is served`);
    }
    assert.equal(valueOf(samples, 'gpuplane_info', { version: VERSION, mode: 'emulator', clock: 'virtual', database: dialect }), 1);
    assert.equal(valueOf(samples, 'gpuplane_database_up'), 1);
  });

  test('requests are counted and timed by route pattern, method and status', async () => {
    const route = { route: '/api/v0/instances/:id/history/', method: 'GET', status: '404' };
    const before = await scrape(app());
    for (const id of [999991, 999992, 999993]) assert.equal((await app().request('GET', `/api/v0/instances/${id}/history/`)).status, 404);
    assert.equal((await app().request('GET', '/api/v0/users/current', { key: null })).status, 401);
    const after = await scrape(app());
    const delta = (name: string, labels: Record<string, string>) => (valueOf(after, name, labels) ?? 0) - (valueOf(before, name, labels) ?? 0);

    assert.equal(delta('gpuplane_http_requests_total', route), 3);
    assert.equal(delta('gpuplane_http_request_duration_seconds_count', route), 3);
    assert.equal(delta('gpuplane_http_request_duration_seconds_bucket', { ...route, le: '+Inf' }), 3);
    assert.ok(delta('gpuplane_http_request_duration_seconds_sum', route) > 0);
    assert.equal(delta('gpuplane_http_requests_total', { route: '/api/v0/users/current/', method: 'GET', status: '401' }), 1);
    assert.ok(!after.some((s) => s.labels.route?.includes('99999')), 'no raw URL in a label');
  });

  test('instances by state and offers listed follow renting and booting', async () => {
    const t = app();
    const before = await scrape(t);
    assert.equal(valueOf(before, 'gpuplane_offers_listed'), await offersInSearch(t));
    const m = await addMachine(t, { num_gpus: 1 });
    const running = valueOf(before, 'gpuplane_instances', { state: 'running' })!;
    const provisioning = valueOf(before, 'gpuplane_instances', { state: 'provisioning' })!;
    const afterAdd = await scrape(t);
    assert.equal(valueOf(afterAdd, 'gpuplane_offers_listed'), valueOf(before, 'gpuplane_offers_listed')! + 1);

    await rentOk(t, offerFor(m, 1));
    const rented = await scrape(t);
    assert.equal(valueOf(rented, 'gpuplane_instances', { state: 'provisioning' }), provisioning + 1);
    assert.equal(valueOf(rented, 'gpuplane_offers_listed'), await offersInSearch(t));
    assert.equal(valueOf(rented, 'gpuplane_offers_listed'), valueOf(before, 'gpuplane_offers_listed'));

    await t.advance(BOOT_MAX_S);
    const booted = await scrape(t);
    assert.equal(valueOf(booted, 'gpuplane_instances', { state: 'running' }), running + 1);
    assert.equal(valueOf(booted, 'gpuplane_instances', { state: 'provisioning' }), provisioning);
    assert.equal(valueOf(booted, 'gpuplane_instances', { state: 'exited' }), 0, 'known states are reported even at 0');
  });

  test('scheduler backlog and lag: jobs due and not yet run, and the age of the oldest', async () => {
    const t = app();
    const idle = await scrape(t);
    assert.equal(valueOf(idle, 'gpuplane_scheduler_backlog_jobs'), 0);
    assert.equal(valueOf(idle, 'gpuplane_scheduler_lag_seconds'), 0);

    const now = t.clock.now();
    // Kinds without a handler: running them only drops them.
    await t.scheduler.schedule('ops-test-late', now - 30, {}, { ref: 'ops-test' });
    await t.scheduler.schedule('ops-test-late', now - 5, {}, { ref: 'ops-test' });
    await t.scheduler.schedule('ops-test-later', now + 60, {}, { ref: 'ops-test' });
    const late = await scrape(t);
    assert.equal(valueOf(late, 'gpuplane_scheduler_backlog_jobs'), 2);
    assert.equal(valueOf(late, 'gpuplane_scheduler_lag_seconds'), 30);

    await t.scheduler.runDue();
    const caughtUp = await scrape(t);
    assert.equal(valueOf(caughtUp, 'gpuplane_scheduler_backlog_jobs'), 0);
    assert.equal(valueOf(caughtUp, 'gpuplane_scheduler_lag_seconds'), 0);
    await t.scheduler.cancel('ops-test');
  });

  test('database pool use', async () => {
    const samples = await scrape(app());
    const total = valueOf(samples, 'gpuplane_db_pool_connections')!;
    const idle = valueOf(samples, 'gpuplane_db_pool_idle_connections')!;
    if (dialect === 'sqlite') {
      assert.deepEqual([valueOf(samples, 'gpuplane_db_pool_max_connections'), total, idle], [1, 1, 1]);
      assert.equal(valueOf(samples, 'gpuplane_db_pool_waiting_queries'), undefined, 'SQLite cannot tell');
    } else {
      // The harness's pool size.
      assert.equal(valueOf(samples, 'gpuplane_db_pool_max_connections'), 5);
      assert.ok(total >= 1 && total <= 5 && idle <= total, `total ${total}, idle ${idle}`);
      assert.equal(valueOf(samples, 'gpuplane_db_pool_waiting_queries'), 0);
    }
  });
});
