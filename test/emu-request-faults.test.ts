// Issue 34 item 3: faults by API operation (/_emu/request-faults): a rule by route and method, or by permission
// category, answers with its status (429 with Retry-After, 5xx), adds latency, or drops the connection; seeded, counted,
// listed and cleared; the emulator's own routes and the probes are never faulted.
import { beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, forEachDialect, type TestApp } from './helpers/harness.js';
import { draw } from '../src/emulator/emu-request-faults/request-faults-service.js';

const BUNDLES = '/api/v0/bundles/';
const SEARCH = { rentable: { eq: true }, limit: 1 };

async function addRule(t: TestApp, body: Record<string, unknown>) {
  const r = await t.request('POST', '/_emu/request-faults', { body });
  assert.equal(r.status, 200, r.raw);
  return r.body.fault;
}

/** Statuses of `n` GET users/current requests, in order. */
async function statuses(t: TestApp, n: number, key?: string): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await t.request('GET', '/api/v0/users/current/', { key })).status);
  return out;
}

forEachDialect('emulator request faults', (app, dialect) => {
  beforeEach(async () => {
    assert.equal((await app().request('DELETE', '/_emu/request-faults')).status, 200);
  });

  test('a 429 rule on POST bundles: the exact status, Retry-After and error body, `count` times, then answers again', async () => {
    const t = app();
    const fault = await addRule(t, { route: BUNDLES, method: 'POST', status: 429, retry_after: 2, count: 2 });
    assert.deepEqual(
      { ...fault, id: 0, created_at: 0 },
      {
        id: 0, method: 'POST', route: BUNDLES, category: null, probability: 1, status: 429, retry_after: 2, latency_ms: 0,
        timeout: false, count: 2, seed: null, matched: 0, fired: 0, created_at: 0,
      },
    );
    assert.equal(fault.created_at, t.clock.now());
    for (let i = 0; i < 2; i++) {
      const r = await t.request('POST', BUNDLES, { body: SEARCH });
      assert.equal(r.status, 429);
      assert.equal(r.headers['retry-after'], '2');
      assert.match(String(r.headers['content-type']), /^application\/json/);
      assert.deepEqual(r.body, { success: false, error: 'rate_limited', msg: 'too many requests; retry later' });
    }
    const third = await t.request('POST', BUNDLES, { body: SEARCH });
    assert.equal(third.status, 200, third.raw);
    assert.equal(third.body.offers.length, 1);
    // Another method of the same path, and another route, are not matched.
    assert.equal((await t.request('GET', '/api/v0/users/current/')).status, 200);
    const [listed] = (await t.request('GET', '/_emu/request-faults')).body.faults;
    assert.equal(listed.id, fault.id);
    assert.equal(listed.fired, 2);
    assert.equal(listed.matched, 2); // a used-up rule counts no more requests
  });

  test('the route matches with or without its trailing slash, in {param} or :param form, and as a prefix', async () => {
    const t = app();
    const user = await t.createUser();
    await addRule(t, { route: '/api/v0/instances/:id', method: 'GET', status: 502 });
    const r = await t.request('GET', '/api/v0/instances/999999/', { key: user.api_key });
    assert.equal(r.status, 502);
    assert.deepEqual(r.body, { success: false, error: 'bad_gateway', msg: 'bad gateway' });
    assert.equal(r.headers['retry-after'], undefined);
    const listed = (await t.request('GET', '/_emu/request-faults')).body.faults[0];
    assert.equal(listed.route, '/api/v0/instances/{id}');
    assert.equal((await t.request('GET', '/api/v0/instances/', { key: user.api_key })).status, 200);
    await t.request('DELETE', '/_emu/request-faults');

    await addRule(t, { route: '/api/v0/users/*', status: 500 });
    assert.deepEqual((await t.request('GET', '/api/v0/users/current/')).body, { success: false, error: 'internal_error', msg: 'internal error' });
    assert.equal((await t.request('POST', BUNDLES, { body: SEARCH })).status, 200);
  });

  test('probability 0.5 with a seed: the same sequence on a fresh app, the draw of (seed, n)', async () => {
    const t = app();
    const runOn = async (a: TestApp) => {
      await addRule(a, { route: '/api/v0/users/current/', probability: 0.5, seed: 1234, status: 503 });
      return statuses(a, 24);
    };
    const first = await runOn(t);
    const fresh = await createTestApp(dialect);
    let second: number[];
    try {
      second = await runOn(fresh);
    } finally {
      await fresh.close();
    }
    assert.deepEqual(second, first);
    const expected = Array.from({ length: 24 }, (_, i) => (draw(1234, null, i + 1) < 0.5 ? 503 : 200));
    assert.deepEqual(first, expected);
    assert.ok(first.includes(503) && first.includes(200), `a mix: ${first.join(' ')}`);
    const [listed] = (await t.request('GET', '/_emu/request-faults')).body.faults;
    assert.equal(listed.matched, 24);
    assert.equal(listed.fired, first.filter((s) => s === 503).length);
  });

  test('without a rule seed: GPUPLANE_SEED and the rule id decide, the same on a fresh app', async () => {
    const t = app();
    const rule = await addRule(t, { route: '/api/v0/users/current/', probability: 0.3 });
    const got = await statuses(t, 20);
    const expected = Array.from({ length: 20 }, (_, i) => (draw(t.config.seed, rule.id, i + 1) < 0.3 ? 429 : 200));
    assert.deepEqual(got, expected);
  });

  test('a category rule faults every route of the category and no other', async () => {
    const t = app();
    await addRule(t, { category: 'user_read', status: 504 });
    const r = await t.request('GET', '/api/v0/users/current/');
    assert.equal(r.status, 504);
    assert.deepEqual(r.body, { success: false, error: 'service_unavailable', msg: 'gateway timeout; retry later' });
    assert.equal((await t.request('GET', '/api/v0/ssh/')).status, 504); // user_read too
    assert.equal((await t.request('POST', BUNDLES, { body: SEARCH })).status, 200);
    assert.equal((await t.request('GET', '/api/v0/instances/')).status, 200);
    // A method narrows a category rule further.
    await t.request('DELETE', '/_emu/request-faults');
    await addRule(t, { category: 'user_read', method: 'POST' });
    assert.equal((await t.request('GET', '/api/v0/users/current/')).status, 200);
  });

  test('latency only: the request waits, then is answered as usual; with a status, waits then faults', async () => {
    const t = app();
    await addRule(t, { route: '/api/v0/users/current/', latency_ms: 300 });
    let start = performance.now();
    const r = await t.request('GET', '/api/v0/users/current/');
    assert.equal(r.status, 200);
    assert.ok(performance.now() - start >= 290, `waited ${performance.now() - start} ms`);
    const [listed] = (await t.request('GET', '/_emu/request-faults')).body.faults;
    assert.equal(listed.status, null);
    assert.equal(listed.fired, 1);

    await t.request('DELETE', '/_emu/request-faults');
    await addRule(t, { route: '/api/v0/users/current/', latency_ms: 200, status: 503 });
    start = performance.now();
    assert.equal((await t.request('GET', '/api/v0/users/current/')).status, 503);
    assert.ok(performance.now() - start >= 190);
  });

  test('a timeout drops the connection without an answer after latency_ms', async () => {
    const t = await createTestApp(dialect);
    try {
      const url = await t.app.listen({ port: 0, host: '127.0.0.1' });
      await addRule(t, { route: '/api/v0/users/current/', timeout: true, latency_ms: 200, count: 1 });
      const headers = { authorization: `Bearer ${t.ownerKey}` };
      const start = performance.now();
      await assert.rejects(fetch(`${url}/api/v0/users/current/`, { headers }), (err: Error & { cause?: { code?: string } }) => {
        assert.equal(err.name, 'TypeError'); // fetch failed: the socket closed with no reply
        return true;
      });
      assert.ok(performance.now() - start >= 190);
      // Used up: the next request is answered.
      assert.equal((await fetch(`${url}/api/v0/users/current/`, { headers })).status, 200);
      const [listed] = (await t.request('GET', '/_emu/request-faults')).body.faults;
      assert.deepEqual([listed.timeout, listed.status, listed.latency_ms, listed.fired], [true, null, 200, 1]);
      // An injected request (as a scheduled job's replay is) is rejected the same way, not left hanging.
      await addRule(t, { route: '/api/v0/users/current/', timeout: true, latency_ms: 50, count: 1 });
      await assert.rejects(t.request('GET', '/api/v0/users/current/'), /response destroyed before completion/);
      await t.request('DELETE', '/_emu/request-faults');
      // Without latency_ms a timeout waits 30 s (the close of the app ends the wait).
      const rule = await addRule(t, { route: '/api/v0/users/current/', timeout: true });
      assert.equal(rule.latency_ms, 30_000);
    } finally {
      await t.close();
    }
  });

  test('list and clear: one rule by id (404 when unknown), then every rule', async () => {
    const t = app();
    const a = await addRule(t, { route: BUNDLES, method: 'POST' });
    const b = await addRule(t, { category: 'instance_write', status: 503, probability: 0.25, seed: 9 });
    const list = await t.request('GET', '/_emu/request-faults');
    assert.deepEqual(list.body.faults.map((f: { id: number }) => f.id), [a.id, b.id]);
    assert.deepEqual((await t.request('DELETE', `/_emu/request-faults/${a.id}`)).body, { success: true, removed: 1 });
    const gone = await t.request('DELETE', `/_emu/request-faults/${a.id}`);
    assert.equal(gone.status, 404);
    assert.equal(gone.body.error, 'not_found');
    assert.deepEqual((await t.request('GET', '/_emu/request-faults')).body.faults.map((f: { id: number }) => f.id), [b.id]);
    await addRule(t, { route: '*', latency_ms: 1 });
    assert.deepEqual((await t.request('DELETE', '/_emu/request-faults')).body, { success: true, removed: 2 });
    assert.deepEqual((await t.request('GET', '/_emu/request-faults')).body, { faults: [] });
    assert.equal((await t.request('POST', BUNDLES, { body: SEARCH })).status, 200);
  });

  test('/_emu/reset clears the rules', async () => {
    const t = app();
    await addRule(t, { route: BUNDLES });
    assert.equal((await t.request('POST', '/_emu/reset', { body: {} })).status, 200);
    assert.deepEqual((await t.request('GET', '/_emu/request-faults')).body, { faults: [] });
  });

  test('route "*" faults every API request, unknown paths too, but never /_emu/, /healthz or /readyz', async () => {
    const t = app();
    await addRule(t, { route: '*', status: 503 });
    assert.equal((await t.request('GET', '/api/v0/users/current/')).status, 503);
    assert.equal((await t.request('GET', '/api/v0/no-such-route/')).status, 503);
    assert.equal((await t.request('GET', '/api/v0/users/current/', { key: null })).status, 503); // before authentication
    assert.equal((await t.request('GET', '/_emu/clock')).status, 200);
    assert.equal((await t.request('GET', '/healthz')).status, 200);
    // Answered by the probe (whatever it says), not by the rule.
    const ready = await t.request('GET', '/readyz');
    assert.notDeepEqual(ready.body, { success: false, error: 'service_unavailable', msg: 'service unavailable; retry later' });
    assert.equal((await t.request('GET', '/_emu/request-faults')).status, 200);
    assert.equal((await t.request('DELETE', '/_emu/request-faults')).status, 200);
    assert.equal((await t.request('GET', '/api/v0/users/current/')).status, 200);
  });

  test('bad input: 400 naming the field', async () => {
    const t = app();
    const bad = async (body: unknown, field: string) => {
      const r = await t.request('POST', '/_emu/request-faults', { body });
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.raw}`);
      assert.equal(r.body.success, false);
      assert.equal(r.body.error, 'bad_request');
      assert.match(r.body.msg, new RegExp(field), `${JSON.stringify(body)}: ${r.body.msg}`);
    };
    await bad({ category: 'instance_writes' }, 'category');
    await bad({ route: '/api/v0/nope/' }, 'route');
    await bad({ route: 'api/v0/bundles/' }, 'route');
    await bad({ route: '/api/*/bundles/' }, 'route');
    await bad({ route: BUNDLES, method: 'DELETE' }, 'method');
    await bad({ route: BUNDLES, method: 'PATCH' }, 'method');
    await bad({}, 'route');
    await bad({ probability: 0.5 }, 'route');
    await bad({ route: BUNDLES, probability: 1.5 }, 'probability');
    await bad({ route: BUNDLES, status: 418 }, 'status');
    await bad({ route: BUNDLES, status: 503, retry_after: 5 }, 'retry_after');
    await bad({ route: BUNDLES, timeout: true, status: 429 }, 'status');
    await bad({ route: BUNDLES, latency_ms: 60_001 }, 'latency_ms');
    await bad({ route: BUNDLES, count: 0 }, 'count');
    await bad({ route: BUNDLES, seed: -1 }, 'seed');
    await bad({ route: BUNDLES, colour: 'red' }, 'colour');
    const id = await t.request('DELETE', '/_emu/request-faults/abc');
    assert.equal(id.status, 400);
    assert.match(id.body.msg, /id/);
    assert.deepEqual((await t.request('GET', '/_emu/request-faults')).body, { faults: [] });
  });

  test('admin keys only', async () => {
    const t = app();
    const user = await t.createUser();
    const r = await t.request('POST', '/_emu/request-faults', { key: user.api_key, body: { route: '*' } });
    assert.equal(r.status, 403);
    assert.equal((await t.request('GET', '/_emu/request-faults', { key: user.api_key })).status, 403);
    assert.equal((await t.request('GET', '/_emu/request-faults', { key: null })).status, 401);
  });
});
