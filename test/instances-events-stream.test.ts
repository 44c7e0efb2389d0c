// A stream with no `timeout` stays open until the client leaves (issue 11 §4: it used to close after about 0.25 s,
// because a timer of Number.MAX_SAFE_INTEGER ms is clamped by Node to 1 ms), and the server's shutdown ends it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { forEachDialect } from './helpers/harness.js';
import { addMachine, BOOT_MAX_S, offerFor, rentOk } from './instances-fixtures.js';

/** Reads an SSE response frame by frame: `next()` resolves with the next frame, or null when the stream ended. */
function frames(body: ReadableStream<Uint8Array>) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  return {
    async next(): Promise<string | null> {
      for (;;) {
        const end = buffered.indexOf('\n\n');
        if (end >= 0) {
          const frame = buffered.slice(0, end);
          buffered = buffered.slice(end + 2);
          return frame;
        }
        const { done, value } = await reader.read();
        if (done) return null;
        buffered += decoder.decode(value, { stream: true });
      }
    },
    /** The next `event: instance` frame's data (comment frames skipped). */
    async nextEvent(): Promise<any> {
      for (;;) {
        const f = await this.next();
        if (f === null) return null;
        const data = /^data: (.*)$/m.exec(f);
        if (/^event: instance$/m.test(f) && data) return JSON.parse(data[1]);
      }
    },
    cancel: () => reader.cancel(),
  };
}

/**
 * Each step's result within `ms`, else a failure naming the step. The PostgreSQL run of this file once outlived the
 * runner's 240 s limit in CI (the whole file cancelled, no step named); a step that hangs now says which it is.
 */
async function step<T>(what: string, p: Promise<T>, ms = 30_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`step did not finish within ${ms} ms: ${what}`)), ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Long enough that the old stream (closed after about 0.25 s) would be gone, several times over. */
const HOLD_MS = 1500;

forEachDialect('instances: an event stream without a timeout', (app) => {
  test('stays open for seconds and carries the events that happen later; ends when the server shuts down', async () => {
    const { api_key } = await app().createUser();
    const m = await addMachine(app());
    await app().app.listen({ host: '127.0.0.1', port: 0 });
    const address = app().app.server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const res = await step('the stream answers', fetch(`http://127.0.0.1:${port}/api/v0/instances/events/`, { headers: { authorization: `Bearer ${api_key}` } }));
    assert.equal(res.status, 200);
    const stream = frames(res.body!);
    assert.match((await step('the first frame', stream.next()))!, /^retry: \d+\n: listening/);

    await delay(HOLD_MS);
    const { id } = await step('the rent', rentOk(app(), offerFor(m, 1), {}, api_key));
    assert.deepEqual(await step('the rent\'s event', stream.nextEvent().then((e) => [e.id, e.actual_status])), [id, null]);

    await delay(HOLD_MS);
    await step('the clock advance', app().advance(BOOT_MAX_S));
    assert.deepEqual(await step('the loading event', stream.nextEvent().then((e) => [e.id, e.actual_status])), [id, 'loading']);
    assert.deepEqual(await step('the running event', stream.nextEvent().then((e) => [e.id, e.actual_status])), [id, 'running']);

    // Shutdown ends it, and a wait parked beside it: the server does not wait for their clients to leave.
    const hub = app().services.instances.hub;
    const waited = app().request('GET', `/api/v0/instances/${id}/wait/?until=stopped&timeout=600`, { key: api_key });
    const parkBy = Date.now() + 30_000;
    while (hub.waiting < 2 && Date.now() < parkBy) await new Promise((r) => setImmediate(r));
    assert.equal(hub.waiting, 2, 'the stream and the wait both parked within 30 s');
    hub.close();
    assert.equal(await step('the stream ends', stream.next()), null);
    const w = await step('the wait answers', waited);
    assert.equal(w.status, 503);
    assert.equal(w.body.error, 'service_unavailable');
    assert.match(w.body.msg, /shutting down; instance \d+ is running: retry the wait/);
  });
});
