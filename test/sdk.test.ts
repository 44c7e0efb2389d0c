// The SDK's transport: typed errors, 429 retried after Retry-After, one Idempotency-Key per create across retries,
// the SSE reader, and waitForInstance (success, failure, timeout, poll fallback), against a scripted HTTP server;
// and that src/sdk stays browser-safe (no Node-only or server runtime imports).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import { createClient } from '../src/sdk/client.js';
import { GpuplaneError, InstanceFailedError, WaitTimeoutError } from '../src/sdk/errors.js';
import { readEvents } from '../src/sdk/sse.js';
import { createTransport, retryAfterSeconds } from '../src/sdk/transport.js';
import { ROOT } from './cli-helpers.js';

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

/** A scripted server: each test sets `handler`; every request is recorded. */
let server: Server;
let url = '';
let handler: Handler = (_q, res) => res.end();
const seen: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[] = [];

before(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      handler(req, res, body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const a = server.address();
  url = `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
});
after(() => {
  server.closeAllConnections();
  server.close();
});

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

function recorder() {
  const waits: number[] = [];
  return { waits, sleep: async (ms: number) => void waits.push(ms) };
}

describe('transport', () => {
  test('sends the key as Bearer and JSON bodies; parses the JSON reply', async () => {
    seen.length = 0;
    handler = (_q, res) => json(res, 200, { ok: 1 });
    const t = createTransport({ url, apiKey: 'k_123' });
    const r = await t.request<{ ok: number }>('POST', '/api/v0/x/', { body: { a: 1 }, query: { f: { b: { eq: 2 } }, n: 3 } });
    assert.deepEqual(r, { ok: 1 });
    assert.equal(seen[0].headers.authorization, 'Bearer k_123');
    assert.equal(seen[0].headers['content-type'], 'application/json');
    assert.equal(seen[0].body, '{"a":1}');
    const q = new URL(seen[0].url, url).searchParams;
    assert.equal(q.get('f'), '{"b":{"eq":2}}');
    assert.equal(q.get('n'), '3');
    assert.equal(seen[0].headers['idempotency-key'], undefined, 'no key on calls that are not creates');
  });

  test('an error reply becomes a GpuplaneError with status, error code, msg and the body', async () => {
    handler = (_q, res) => json(res, 403, { success: false, error: 'tfa_locked', msg: 'locked', fail_count: 5 });
    const t = createTransport({ url });
    await assert.rejects(t.request('GET', '/a'), (err: unknown) => {
      assert.ok(err instanceof GpuplaneError);
      assert.equal(err.status, 403);
      assert.equal(err.error, 'tfa_locked');
      assert.equal(err.msg, 'locked');
      assert.equal(err.body?.fail_count, 5);
      return true;
    });
  });

  test('a non-JSON error reply is http_<status> with the text', async () => {
    handler = (_q, res) => {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<h1>bad gateway</h1>');
    };
    await assert.rejects(createTransport({ url }).request('GET', '/a'), { status: 502, error: 'http_502', msg: 'HTTP 502: <h1>bad gateway</h1>' });
  });

  test('200 with success:false is an error carrying the server msg', async () => {
    handler = (_q, res) => json(res, 200, { success: false, msg: 'instance is not stopped' });
    await assert.rejects(createTransport({ url }).request('PUT', '/a', { body: {} }), { status: 200, msg: 'instance is not stopped' });
  });

  test('an unreachable server is network_error, status 0, after two more tries of a GET (250 ms, then 500 ms, each in its upper half)', async () => {
    const { waits, sleep } = recorder();
    await assert.rejects(createTransport({ url: 'http://127.0.0.1:1', sleep, random: () => 0 }).request('GET', '/a'), { status: 0, error: 'network_error' });
    assert.deepEqual(waits, [125, 250]);
  });

  test('a connection reset before any answer: a GET and a create with an Idempotency-Key are sent again (same key); a plain PUT is not', async () => {
    let resets = 0;
    handler = (_q, res) => (resets-- > 0 ? res.socket!.destroy() : json(res, 200, { ok: 1 }));
    const { waits, sleep } = recorder();
    const t = createTransport({ url, sleep, random: () => 0 });

    seen.length = 0;
    resets = 2;
    assert.deepEqual(await t.request('GET', '/a'), { ok: 1 });
    assert.equal(seen.length, 3);
    assert.equal(waits.length, 2);

    seen.length = 0;
    resets = 1;
    assert.deepEqual(await t.request('PUT', '/api/v0/asks/1/', { body: {}, idempotent: true }), { ok: 1 });
    assert.equal(seen.length, 2);
    assert.equal(seen[0].headers['idempotency-key'], seen[1].headers['idempotency-key']);

    seen.length = 0;
    resets = 1;
    await assert.rejects(t.request('PUT', '/api/v0/instances/1/', { body: {} }), { status: 0, error: 'network_error' });
    assert.equal(seen.length, 1, 'a PUT without a key may have been done: it is not sent twice');

    seen.length = 0;
    resets = 3;
    await assert.rejects(t.request('GET', '/a'), { status: 0, error: 'network_error' });
    assert.equal(seen.length, 3, 'two more tries, then the error');
  });

  test('429 is retried after Retry-After, with the same Idempotency-Key on every attempt', async () => {
    seen.length = 0;
    let n = 0;
    handler = (_q, res) =>
      ++n < 3 ? json(res, 429, { success: false, error: 'rate_limited', msg: 'slow down' }, { 'retry-after': '2' }) : json(res, 200, { new_contract: 7 });
    const { waits, sleep } = recorder();
    const t = createTransport({ url, sleep, random: () => 0 });
    const r = await t.request<{ new_contract: number }>('PUT', '/api/v0/asks/1/', { body: {}, idempotent: true });
    assert.equal(r.new_contract, 7);
    assert.deepEqual(waits, [2000, 2000]);
    assert.equal(seen.length, 3);
    const keys = seen.map((s) => s.headers['idempotency-key']);
    assert.match(String(keys[0]), /^[0-9a-f-]{36}$/);
    assert.deepEqual(new Set(keys).size, 1, 'one key across the retries');
    // A second create gets a key of its own.
    seen.length = 0;
    n = 2;
    await t.request('PUT', '/api/v0/asks/1/', { body: {}, idempotent: true });
    assert.notEqual(seen[0].headers['idempotency-key'], keys[0]);
  });

  test('429 retries are bounded: after maxRetries the rate_limited error is reported', async () => {
    seen.length = 0;
    handler = (_q, res) => json(res, 429, { success: false, error: 'rate_limited', msg: 'slow down' }, { 'retry-after': '1' });
    const { waits, sleep } = recorder();
    await assert.rejects(createTransport({ url, sleep, maxRetries: 2, random: () => 0 }).request('GET', '/a'), { status: 429, error: 'rate_limited' });
    assert.equal(seen.length, 3);
    assert.deepEqual(waits, [1000, 1000]);
  });

  test('a retry comes after Retry-After and up to half of it more, spread at random so turned-away clients do not return together', async () => {
    handler = (_q, res) => json(res, 429, { success: false, error: 'rate_limited', msg: 'slow down' }, { 'retry-after': '2' });
    const { waits: latest, sleep: s1 } = recorder();
    await assert.rejects(createTransport({ url, sleep: s1, maxRetries: 1, random: () => 0.5 }).request('GET', '/a'), { error: 'rate_limited' });
    assert.deepEqual(latest, [2500]);
    const { waits, sleep } = recorder();
    const t = createTransport({ url, sleep, maxRetries: 20 });
    await assert.rejects(t.request('GET', '/a'), { error: 'rate_limited' });
    assert.equal(waits.length, 20);
    for (const w of waits) assert.ok(w >= 2000 && w < 3000, String(w));
    assert.equal(new Set(waits).size, waits.length, 'no two retries wait the same');
  });

  test('a Retry-After longer than maxRetryAfterSeconds is reported at once, not waited out', async () => {
    seen.length = 0;
    handler = (_q, res) => json(res, 429, { success: false, error: 'rate_limited', msg: 'slow down' }, { 'retry-after': '3600' });
    const { waits, sleep } = recorder();
    await assert.rejects(createTransport({ url, sleep, maxRetryAfterSeconds: 60 }).request('GET', '/a'), { error: 'rate_limited' });
    assert.deepEqual(waits, []);
    assert.equal(seen.length, 1);
  });

  test('Retry-After as seconds, as an HTTP date, or missing', () => {
    const now = Date.parse('2027-01-15T08:00:00Z');
    assert.equal(retryAfterSeconds('7', now), 7);
    assert.equal(retryAfterSeconds('Fri, 15 Jan 2027 08:00:30 GMT', now), 30);
    assert.equal(retryAfterSeconds(null, now), 1);
    assert.equal(retryAfterSeconds('soon', now), 1);
  });
});

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(c) {
      for (const ch of chunks) c.enqueue(enc.encode(ch));
      c.close();
    },
  });
}

describe('SSE reader', () => {
  test('events split across chunks, CRLF and CR line ends, comments, multi-line data, ids', async () => {
    const events = [];
    for await (const ev of readEvents(streamOf([': hello\n\nevent: inst', 'ance\ndata: {"a"', ':1}\r\nid: 4\r\n\r', '\ndata: x\rdata: y\r\r', 'data: cut']))) {
      events.push(ev);
    }
    assert.deepEqual(events, [
      { event: 'instance', data: '{"a":1}', id: '4' },
      { event: 'message', data: 'x\ny', id: '4' },
    ]);
  });

  test('an event whose blank line ends in CR is read at once, before the server writes again', async () => {
    const enc = new TextEncoder();
    // The stream stays open: the event must come from what was sent, not from a later chunk or the close.
    const open = new ReadableStream<Uint8Array>({ start: (c) => c.enqueue(enc.encode('id: 7\rdata: a\r\r')) });
    const events = readEvents(open);
    assert.deepEqual((await events.next()).value, { event: 'message', data: 'a', id: '7' });
    await events.return(undefined);
  });
});

/** A server whose instance goes through `states` on its event stream; GET show answers with the first state. */
function instanceServer(id: number, states: (string | null)[], opts: { events?: boolean } = {}) {
  let shows = 0;
  handler = (req, res) => {
    if (req.url!.startsWith('/api/v0/instances/events')) {
      if (opts.events === false) return json(res, 404, { success: false, error: 'not_found', msg: 'no route' });
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': connected\n\n');
      // Another instance's events must be ignored.
      res.write(`event: instance\ndata: ${JSON.stringify({ id: id + 1, actual_status: 'exited' })}\n\n`);
      let i = 1;
      const tick = setInterval(() => {
        if (i >= states.length) return clearInterval(tick);
        res.write(`event: instance\ndata: ${JSON.stringify({ id, actual_status: states[i++] })}\n\n`);
      }, 20);
      res.on('close', () => clearInterval(tick));
      return;
    }
    if (req.url!.startsWith(`/api/v0/instances/${id}/`)) {
      const s = opts.events === false ? states[Math.min(shows, states.length - 1)] : states[0];
      shows++;
      return json(res, 200, { instances: { id, actual_status: s, label: 'x' } });
    }
    json(res, 404, { success: false, error: 'not_found', msg: 'no route' });
  };
}

describe('waitForInstance', () => {
  test('resolves with the full instance when it reaches running; reports each state once', async () => {
    instanceServer(5, [null, 'loading', 'loading', 'running']);
    const states: (string | null)[] = [];
    const inst = await createClient({ url }).waitForInstance(5, { timeout: 10, onStatus: (s) => states.push(s) });
    assert.equal(inst.id, 5);
    assert.equal(inst.label, 'x', 'the full record from show, not the partial event');
    assert.deepEqual(states, [null, 'loading', 'running']);
  });

  for (const bad of ['exited', 'unknown', 'offline']) {
    test(`fails with InstanceFailedError on ${bad}`, async () => {
      instanceServer(6, ['loading', bad]);
      await assert.rejects(createClient({ url }).waitForInstance(6, { timeout: 10 }), (err: unknown) => {
        assert.ok(err instanceof InstanceFailedError);
        assert.equal(err.error, 'instance_failed');
        assert.equal(err.actualStatus, bad);
        return true;
      });
    });
  }

  test('until another state: waits for stopped', async () => {
    instanceServer(7, ['running', 'stopped']);
    const inst = await createClient({ url }).waitForInstance(7, { until: 'stopped', timeout: 10 });
    assert.equal(inst.id, 7);
  });

  test('times out with WaitTimeoutError naming the last state', async () => {
    instanceServer(8, ['loading']);
    const t0 = performance.now();
    await assert.rejects(createClient({ url }).waitForInstance(8, { timeout: 0.3 }), (err: unknown) => {
      assert.ok(err instanceof WaitTimeoutError);
      assert.equal(err.error, 'timeout');
      assert.equal(err.lastStatus, 'loading');
      return true;
    });
    assert.ok(performance.now() - t0 < 3000);
  });

  test('a missing instance is not_found', async () => {
    handler = (req, res) => {
      if (req.url!.startsWith('/api/v0/instances/events')) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        return res.write(': hi\n\n');
      }
      json(res, 200, { instances: null });
    };
    await assert.rejects(createClient({ url }).waitForInstance(9, { timeout: 5 }), { status: 404, error: 'not_found' });
  });

  test('without an event stream (404) it polls show', async () => {
    instanceServer(10, ['loading', 'loading', 'running'], { events: false });
    const inst = await createClient({ url }).waitForInstance(10, { timeout: 10, pollInterval: 0.05 });
    assert.equal(inst.actual_status, 'running');
  });

  test('an abort signal stops the wait', async () => {
    instanceServer(11, ['loading']);
    const ctl = new AbortController();
    // Aborted once the wait is under way (it has reported the first state).
    await assert.rejects(createClient({ url }).waitForInstance(11, { timeout: 10, signal: ctl.signal, onStatus: () => ctl.abort() }), { error: 'aborted' });
  });
});

/** Packages the SDK may import at run time: each runs in browsers (sdk-browser.test.ts bundles the SDK for one). */
const BROWSER_PACKAGES = ['eventsource-parser'];

test('src/sdk is browser-safe: no node: imports, and server modules only through `import type`', () => {
  const dir = join(ROOT, 'src', 'sdk');
  const files = (function walk(d: string): string[] {
    return readdirSync(d).flatMap((n) => (statSync(join(d, n)).isDirectory() ? walk(join(d, n)) : [join(d, n)]));
  })(dir);
  assert.ok(files.length >= 5);
  for (const f of files) {
    const src = readFileSync(f, 'utf8');
    for (const m of src.matchAll(/^\s*(import|export)\s+(type\s+)?[^;]*?from\s+'([^']+)'/gm)) {
      const [, , isType, spec] = m;
      assert.ok(!spec.startsWith('node:'), `${f} imports ${spec}`);
      if (isType || BROWSER_PACKAGES.includes(spec)) continue;
      assert.ok(spec.startsWith('.'), `${f} imports the package ${spec} at runtime`);
      assert.ok(resolve(dirname(f), spec).startsWith(dir + sep), `${f} imports server code ${spec} at runtime`);
    }
  }
});
