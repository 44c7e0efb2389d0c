// Threat: secrets leaking into logs — the presented API key, a `?api_key=` appended to the URL by older vastai
// clients, passwords, 2FA codes and secrets, session keys in replies — including on failed requests and on a 500,
// in both log formats (JSON lines, and the readable lines written to a terminal).
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import type { Logger } from 'pino';
import { createLogger, type LogFormat } from '../src/platform/logging.js';
import { createTestApp, DIALECTS, OWNER_KEY, type Reply, type TestApp } from './helpers/harness.js';
import { addMachine, offerFor, rentOk } from './instances-fixtures.js';

/** Every log line the app writes, in `format`. */
function capture(format: LogFormat) {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  return { lines, logger: () => createLogger({ level: 'trace', format, destination: stream }) };
}

/** A readable request line: `[12:00:00.000] INFO: GET /url 200 0.4 ms user 3`. */
const PRETTY_REQUEST = /^\[\d\d:\d\d:\d\d\.\d{3}\] [A-Z]+: ([A-Z]+) (\S+) (\d{3}) \d+(?:\.\d)? ms(?: user \d+)?$/;

/** Strings in a reply that are secrets by their prefix (API keys, sessions, instance keys, endpoint keys). */
function secretsIn(reply: Reply): string[] {
  return [...reply.raw.matchAll(/gp[ksie]_[A-Za-z0-9_-]{20,}/g)].map((m) => m[0]);
}

for (const format of ['json', 'pretty'] as const) for (const dialect of DIALECTS) {
  describe(`logging, ${format} [${dialect}]`, () => {
    const out = capture(format);
    let log: Logger;
    let t: TestApp;
    const secrets: string[] = [OWNER_KEY];
    let requests = 0;
    const send = async (...args: Parameters<TestApp['request']>) => {
      requests++;
      const res = await t.request(...args);
      secrets.push(...secretsIn(res));
      return res;
    };

    before(async () => {
      log = await out.logger();
      t = await createTestApp(dialect, { log });
    });
    after(async () => {
      await t.close();
    });

    test('requests carrying secrets in every place a client puts them', async () => {
      const password = 'correct-horse-battery-staple-77';
      const made = await send('POST', '/_emu/users', { body: { email: 'logged@example.com', password, phone_number: '+15550009999' } });
      assert.equal(made.status, 200);
      const userKey: string = made.body.api_key;
      const urlKey = 'gpk_FromTheQueryString0123456789abcdef';
      secrets.push(password, urlKey);

      assert.equal((await send('GET', '/api/v0/users/current', { key: userKey })).status, 200);
      assert.equal((await send('GET', `/api/v0/users/current?api_key=${urlKey}`, { key: userKey })).status, 200);
      assert.equal((await send('GET', `/api/v0/users/current/?owner=me&api_key=${urlKey}&x=1`)).status, 200);
      const guessed = 'gpk_GuessedKeyThatDoesNotExist000000000000';
      secrets.push(guessed);
      assert.equal((await send('GET', '/api/v0/users/current', { key: guessed })).status, 401);
      assert.equal((await send('GET', '/api/v0/users/current', { key: null, headers: { authorization: `Token ${userKey}` } })).status, 401);
      assert.equal((await send('GET', `/nowhere?api_key=${urlKey}`)).status, 404);
      // The serverless SDK's routes take the key from ?api_key= (client-compat-more "Everywhere"); so does the router,
      // with an endpoint's own key (which the endpoint's reply shows, and secretsIn collects).
      assert.equal((await send('GET', `/api/v0/endptjobs/?client_id=me&api_key=${userKey}`, { key: null })).status, 200);
      const ep = await send('POST', `/api/v0/endptjobs/?api_key=${userKey}`, { key: null, body: { endpoint_name: 'logged' } });
      assert.equal(ep.status, 200, ep.raw);
      const shown = await send('GET', `/api/v0/endptjobs/${ep.body.result}/?api_key=${userKey}`, { key: null });
      assert.equal((await send('POST', `/route/?api_key=${shown.body.result.api_key}`, { key: null, body: { endpoint: 'logged' } })).status, 200);

      // 2FA material: a code and a tfa_secret in a body and in a query string, whatever the route answers.
      const code = '918273';
      const tfaSecret = 'tfa_secret_value_5f3c9a1e77';
      secrets.push(code, tfaSecret);
      await send('POST', '/api/v0/tfa/', { key: null, body: { tfa_method: 'sms', code, secret: tfaSecret } });
      await send('GET', `/api/v0/tfa/status/?code=${code}&secret=${tfaSecret}&tfa_secret=${tfaSecret}`, { key: userKey });
      // request_logs: result_url carries its token in the path, and is fetched without a key; the token is a secret.
      const m = await addMachine(t);
      const { id, instanceKey } = await rentOk(t, offerFor(m, 1));
      requests += 2; // addMachine's and rentOk's own
      secrets.push(instanceKey);
      const logs = await send('PUT', `/api/v0/instances/request_logs/${id}/`, { body: {} });
      assert.equal(logs.status, 200, logs.raw);
      const logPath = new URL(logs.body.result_url).pathname;
      const token = logPath.split('/').at(-2)!;
      assert.ok(token.length >= 20, logPath);
      secrets.push(token);
      assert.equal((await send('GET', logPath, { key: null })).status, 200);
      assert.equal((await send('GET', `${logPath}?tail=1`, { key: null })).status, 200);
      // A login reply hands out a session key; it must not be logged either.
      await send('POST', '/api/v0/auth/login/', { key: null, body: { username: 'logged@example.com', password, client: 'cli' } });
    });

    test('a fault of the service is logged without the key that made the request', async () => {
      const fresh = await createTestApp(dialect, { log });
      await fresh.store.db.destroy();
      requests++;
      const res = await fresh.request('GET', '/api/v0/users/current');
      assert.equal(res.status, 500);
      await fresh.app.close();
      await fresh.close().catch(() => undefined);
    });

    if (format === 'json') test('one structured request line per request, with method, redacted URL, status and time', () => {
      const records = out.lines.map((l) => JSON.parse(l));
      const requestLines = records.filter((r) => r.msg === 'request');
      assert.equal(requestLines.length, requests);
      for (const r of requestLines) {
        assert.equal(typeof r.method, 'string');
        assert.equal(typeof r.url, 'string');
        assert.equal(typeof r.status, 'number');
        assert.equal(typeof r.ms, 'number');
        assert.equal(r.req, undefined, 'no raw request (headers) is logged');
      }
      const redacted = requestLines.filter((r) => r.url.includes('api_key='));
      assert.equal(redacted.length, 7);
      for (const r of redacted) assert.match(r.url, /api_key=\[REDACTED\]/);
      assert.ok(requestLines.some((r) => r.url === '/api/v0/users/current/?owner=me&api_key=[REDACTED]&x=1'), 'the rest of the URL is kept');
      assert.ok(records.some((r) => r.level >= 50 && r.err), 'the 500 was logged as an error');
    });

    if (format === 'pretty') test('one readable line per request, with method, redacted URL, status and time', () => {
      const requestLines = out.lines.map((l) => PRETTY_REQUEST.exec(l)).filter((m) => m !== null);
      assert.equal(requestLines.length, requests);
      const urls = requestLines.map((m) => m[2]);
      assert.equal(urls.filter((u) => u.includes('api_key=')).length, 7);
      for (const u of urls.filter((x) => x.includes('api_key='))) assert.match(u, /api_key=\[REDACTED\]/);
      assert.ok(urls.includes('/api/v0/users/current/?owner=me&api_key=[REDACTED]&x=1'), 'the rest of the URL is kept');
      assert.ok(out.lines.some((l) => /^\[[\d:.]+\] ERROR: /.test(l)), 'the 500 was logged as an error');
      assert.ok(!out.lines.some((l) => l.startsWith('{')), 'no JSON line');
    });

    test('no log line contains any secret seen in this test', () => {
      assert.ok(out.lines.length > 0);
      const all = out.lines.join('\n');
      for (const s of new Set(secrets)) assert.ok(!all.includes(s), `a log line contains ${s.slice(0, 8)}…`);
      assert.doesNotMatch(all, /authorization|bearer/i, 'no header is logged');
    });
  });
}
