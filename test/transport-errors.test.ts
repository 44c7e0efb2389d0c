// Fastify's and Node's own error replies (issue 11 item 3): a path parameter over 100 characters, a path that is not
// valid percent-encoding, a body Fastify refuses, a request Node cannot parse or that comes too late, a request while
// the server closes. Each is the spec's error object `{success: false, error, msg}` with `Content-Type:
// application/json` exactly (contract §4), with the status and code of the one table in platform/errors.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import inject from 'light-my-request';
import { createTestApp, DIALECTS, forEachDialect, type Reply } from './helpers/harness.js';
import { ERROR_STATUS } from '../src/platform/errors.js';
import { clientErrorHandler, MAX_PARAM_LENGTH } from '../src/platform/transport-errors.js';

function assertErrorObject(status: number, contentType: unknown, body: any, raw: string, expectStatus: number, error: string): void {
  assert.equal(status, expectStatus, raw);
  assert.equal(contentType, 'application/json', raw);
  assert.deepEqual(Object.keys(body).sort(), ['error', 'msg', 'success'], raw);
  assert.equal(body.success, false);
  assert.equal(body.error, error);
  assert.equal(ERROR_STATUS[error as keyof typeof ERROR_STATUS], expectStatus, `${error} is in the table with that status`);
  assert.ok(typeof body.msg === 'string' && body.msg.length > 0);
  assert.doesNotMatch(raw, /FST_|statusCode|node_modules|\bat .+:\d+:\d+/, 'nothing of Fastify\'s own shape or internals');
}

const check = (res: Reply, status: number, error: string) => assertErrorObject(res.status, res.headers['content-type'], res.body, res.raw, status, error);

/** Sends raw bytes on a fresh connection and reads the reply until the server closes it. */
function rawExchange(port: number, bytes: string): Promise<{ status: number; headers: Record<string, string>; body: any; raw: string }> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(port, '127.0.0.1', () => socket.write(bytes));
    let data = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk) => (data += chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head, ...rest] = data.split('\r\n\r\n');
      const [statusLine, ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      const raw = rest.join('\r\n\r\n');
      let body: unknown = raw;
      try {
        body = JSON.parse(raw);
      } catch {
        /* kept as text: the assertion says so */
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body, raw });
    });
  });
}

forEachDialect('Fastify\'s own errors', (app) => {
  test(`a path parameter over ${MAX_PARAM_LENGTH} characters is a 400 bad_request error object, on every route with a parameter`, async () => {
    const failures: string[] = [];
    for (const r of app().routes) {
      if (!r.url.includes(':')) continue;
      const url = r.url.replace(/:(\w+)/g, '7'.repeat(MAX_PARAM_LENGTH + 1));
      const res = await app().request(r.method, url, { body: r.method === 'GET' ? undefined : {} });
      try {
        check(res, 400, 'bad_request');
        assert.match(res.body.msg, /path parameter is longer than 100 characters/);
      } catch (e) {
        failures.push(`${r.method} ${r.url}: ${(e as Error).message.split('\n')[0]}`);
      }
    }
    assert.deepEqual(failures, []);
    // At the limit, the route itself answers: its schema (a role name has at most 64 characters), or its service.
    const atLimit = await app().request('GET', `/api/v0/team/roles/${'r'.repeat(MAX_PARAM_LENGTH)}/`);
    check(atLimit, 400, 'bad_request');
    assert.match(atLimit.body.msg, /^params\.name /);
    check(await app().request('GET', `/api/v0/instances/${'9'.repeat(9)}/history/`), 404, 'not_found');
  });

  test('a path that is not valid percent-encoding is a 400 bad_request error object', async () => {
    for (const url of ['/api/v0/instances/%E0%A4%A/', '/api/v0/team/roles/%C3%28/', '/api/v0/auth/apikeys/%FF/']) {
      check(await app().request('GET', url), 400, 'bad_request');
    }
  });

  test('bodies Fastify refuses: each its status and code from the table', async () => {
    const cases: Array<[string, Record<string, string>, string, number, string]> = [
      // Fastify reads text/plain as a string: the route's schema then wants an object.
      ['text', { 'content-type': 'text/plain' }, 'a text body', 400, 'bad_request'],
      ['form', { 'content-type': 'application/x-www-form-urlencoded' }, 'ssh_key=x', 415, 'unsupported_media_type'],
      ['xml', { 'content-type': 'application/xml' }, '<ssh_key/>', 415, 'unsupported_media_type'],
      ['short length', { 'content-type': 'application/json', 'content-length': '3' }, '{"ssh_key": "x"}', 400, 'bad_request'],
      ['malformed', { 'content-type': 'application/json' }, '{"ssh_key": ', 400, 'bad_request'],
      ['too large', { 'content-type': 'application/json' }, JSON.stringify({ ssh_key: 'x'.repeat(1_100_000) }), 413, 'payload_too_large'],
    ];
    for (const [what, headers, body, status, error] of cases) {
      const res = await app().request('POST', '/api/v0/ssh/', { body, headers });
      try {
        check(res, status, error);
      } catch (e) {
        throw new Error(`${what}: ${(e as Error).message}`);
      }
    }
    // No Content-Type at all, with a body.
    const bare = await app().app.inject({ method: 'POST', url: '/api/v0/ssh/', payload: '{"ssh_key": "x"}', headers: { authorization: `Bearer ${app().ownerKey}` } });
    assertErrorObject(bare.statusCode, bare.headers['content-type'], JSON.parse(bare.body), bare.body, 415, 'unsupported_media_type');
    // A method no route has, and an unknown path.
    check(await app().request('PROPFIND', '/api/v0/ssh/'), 404, 'not_found');
    check(await app().request('GET', '/api/v0/nowhere/'), 404, 'not_found');
  });
});

for (const dialect of DIALECTS) {
  test(`requests Node cannot parse are error objects on the wire: malformed, headers too large [${dialect}]`, async () => {
    const t = await createTestApp(dialect);
    try {
      await t.app.listen({ host: '127.0.0.1', port: 0 });
      const port = (t.app.server.address() as { port: number }).port;
      const cases: Array<[string, string, number, string]> = [
        ['not HTTP', 'HELLO THERE\r\n\r\n', 400, 'bad_request'],
        ['bad header line', 'GET /api/v0/gpu_names/unique/ HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n', 400, 'bad_request'],
        ['bad content-length', 'POST /api/v0/ssh/ HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n', 400, 'bad_request'],
        ['headers too large', `GET /api/v0/gpu_names/unique/ HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'headers_too_large'],
        ['URL too long', `GET /api/v0/instances/${'1'.repeat(20_000)}/ HTTP/1.1\r\nHost: x\r\n\r\n`, 431, 'headers_too_large'],
      ];
      for (const [what, bytes, status, error] of cases) {
        const res = await rawExchange(port, bytes);
        try {
          assertErrorObject(res.status, res.headers['content-type'], res.body, res.raw, status, error);
          assert.equal(Number(res.headers['content-length']), Buffer.byteLength(res.raw));
        } catch (e) {
          throw new Error(`${what}: ${(e as Error).message}`);
        }
      }
      // The server still serves after them.
      const ok = await fetch(`http://127.0.0.1:${port}/api/v0/gpu_names/unique/`);
      assert.equal(ok.status, 200);
    } finally {
      await t.close();
    }
  });

  test(`a request while the server closes is a 503 service_unavailable error object [${dialect}]`, async () => {
    const t = await createTestApp(dialect);
    try {
      await t.scheduler.stop();
      await t.app.close();
      // The app's own request handler, as a request on a kept-alive connection reaches it during the close.
      const res = await inject(t.app.routing, { method: 'GET', url: '/api/v0/users/current', headers: { authorization: `Bearer ${t.ownerKey}` } });
      assertErrorObject(res.statusCode, res.headers['content-type'], JSON.parse(res.body), res.body, 503, 'service_unavailable');
      assert.equal(res.headers.connection, 'close');
    } finally {
      await t.close();
    }
  });
}

test('a request that does not arrive in time is a 408 request_timeout error object, then the connection closes', () => {
  let written = '';
  let destroyed = false;
  const socket = { destroyed: false, writable: true, write: (s: string) => (written += s), destroy: () => (destroyed = true) };
  clientErrorHandler(Object.assign(new Error('timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), socket as unknown as Socket);
  const [head, body] = written.split('\r\n\r\n');
  assert.match(head, /^HTTP\/1\.1 408 Request Timeout\r\n/);
  assert.match(head, /\r\nContent-Type: application\/json\r\n/);
  assert.deepEqual(JSON.parse(body), { success: false, error: 'request_timeout', msg: 'the request did not arrive in time' });
  assert.equal(destroyed, true);
  // A reset connection gets nothing.
  written = '';
  clientErrorHandler(Object.assign(new Error('reset'), { code: 'ECONNRESET' }), socket as unknown as Socket);
  assert.equal(written, '');
});
