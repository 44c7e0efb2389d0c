// Threat: one user holds event streams without end (issue 29 item 22: 1,000 streams of one user, each a connection
// the process holds and a poller of the database). GPUPLANE_EVENT_STREAMS_PER_USER caps the streams one user holds
// open at once: past it, 429 `rate_limited` with the spec's error object; other users are not affected, and a closed
// stream gives its place back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';

const CAP = 3;

forEachDialect('instances: event streams one user holds at once', (app) => {
  test(`past GPUPLANE_EVENT_STREAMS_PER_USER (${CAP}) a stream is 429 rate_limited; another user still gets one; a closed one frees its place`, async () => {
    const a = await app().createUser();
    const b = await app().createUser();
    await app().app.listen({ host: '127.0.0.1', port: 0 });
    const address = app().app.server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const held: AbortController[] = [];
    const open = async (key: string) => {
      const ctl = new AbortController();
      const res = await fetch(`http://127.0.0.1:${port}/api/v0/instances/events/`, { headers: { authorization: `Bearer ${key}` }, signal: ctl.signal });
      if (res.status === 200) {
        // The stream has started once its first frame is here.
        const first = await res.body!.getReader().read();
        assert.match(new TextDecoder().decode(first.value), /^retry: \d+\n: listening/);
        held.push(ctl);
        return { status: 200, body: undefined, ctl };
      }
      return { status: res.status, body: await res.json(), ctl };
    };
    try {
      for (let i = 0; i < CAP; i++) assert.equal((await open(a.api_key)).status, 200);
      const over = await open(a.api_key);
      assert.equal(over.status, 429);
      assert.deepEqual(Object.keys(over.body).sort(), ['error', 'msg', 'success']);
      assert.equal(over.body.success, false);
      assert.equal(over.body.error, 'rate_limited');
      assert.match(over.body.msg, /holds 3 instance event streams open, the most this server allows; close one first/);
      assert.equal((await open(b.api_key)).status, 200, 'another user is not held back');
      // A: one stream closes; its place comes back once the server has seen it go (woken, it notices at once).
      held[0].abort();
      const hub = app().services.instances.hub;
      const by = Date.now() + 30_000;
      let again = await open(a.api_key);
      while (again.status === 429 && Date.now() < by) {
        hub.notify();
        await new Promise((r) => setImmediate(r));
        again = await open(a.api_key);
      }
      assert.equal(again.status, 200, 'the closed stream gave its place back within 30 s');
    } finally {
      for (const c of held) c.abort();
    }
  });
}, { config: { GPUPLANE_EVENT_STREAMS_PER_USER: String(CAP) } });
