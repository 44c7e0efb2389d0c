// Issue 32 item 2: the port relay's HTTP/1.1 (src/ports/ports-http1.ts, ports-relay.ts) against apps that answer in
// each framing RFC 9112 §6.3 names, over real TCP connections standing in for tunnel streams: Content-Length, chunked
// with trailers, HEAD, 204/304, 100 Continue, a body to the close, keep-alive reuse, `Connection: close`, a chunked
// upload framed again, a stream the app closed while idle (tried again), malformed replies (502, never a crash), and a
// browser that leaves mid-download (the stream is not reused).
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createServer as createHttpServer, request as httpRequest, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { connect, createServer as createTcpServer, type AddressInfo, type Server as TcpServer, type Socket } from 'node:net';
import { bodyReader, FramingError, parseResponseHead, type ResponseHead } from '../src/ports/ports-http1.js';
import { relayPool, RelayError, type RelayPool } from '../src/ports/ports-relay.js';

const LIMITS = { maxStreams: 4, maxIdle: 2, idleMs: 2000, window: 1 << 20 };

describe('reading a reply head and its body framing', () => {
  const head = (s: string) => parseResponseHead(Buffer.from(s, 'latin1'));

  test('a head with its length: status, text, headers in order; the body starts after the blank line', () => {
    const r = head('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\nhello');
    assert.deepEqual(r, {
      head: { status: 200, statusText: 'OK', rawHeaders: ['Content-Type', 'text/plain', 'Content-Length', '5', 'Set-Cookie', 'a=1', 'Set-Cookie', 'b=2'], closes: false, chunked: false, length: 5 },
      bodyStart: 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n'.length,
    });
  });

  test('an incomplete head waits; HTTP/1.0 closes unless keep-alive; Connection: close closes; chunked wins over a length', () => {
    assert.equal(head('HTTP/1.1 200 OK\r\nContent-Len'), null);
    assert.equal(head('HTTP/1.0 200 OK\r\n\r\n')!.head.closes, true);
    assert.equal(head('HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n\r\n')!.head.closes, false);
    assert.equal(head('HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n')!.head.closes, true);
    const both = head('HTTP/1.1 200 OK\r\nContent-Length: 9\r\nTransfer-Encoding: chunked\r\n\r\n')!.head;
    assert.deepEqual([both.chunked, both.length], [true, null]);
    assert.deepEqual(head('HTTP/1.1 204 No Content\r\n\r\n')!.head.statusText, 'No Content');
    assert.deepEqual(head('HTTP/1.1 200\r\n\r\n')!.head.statusText, '');
  });

  test('what is not HTTP/1.x, a folded or nameless header, two lengths, or a head past 64 KiB is a FramingError', () => {
    assert.throws(() => head('SSH-2.0-OpenSSH_9.2\r\n\r\n'), FramingError);
    assert.throws(() => head('HTTP/1.1 200 OK\r\nA: 1\r\n  folded\r\n\r\n'), /malformed header line/);
    assert.throws(() => head('HTTP/1.1 200 OK\r\n: x\r\n\r\n'), /malformed header line/);
    assert.throws(() => head('HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n'), /not one number/);
    assert.throws(() => head('HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n'), /not one number/);
    assert.throws(() => parseResponseHead(Buffer.alloc(70 * 1024, 'a')), /longer than 65536 bytes/);
  });

  const h = (over: Partial<ResponseHead>): ResponseHead => ({ status: 200, statusText: 'OK', rawHeaders: [], closes: false, chunked: false, length: null, ...over });

  test('chunked: sizes with extensions, data split anywhere, trailers, and the bytes after the end', () => {
    const wire = Buffer.from('5;ext=1\r\nhello\r\nB\r\n, chunked!!\r\n0\r\nX-Trailer: 1\r\n\r\nNEXT', 'latin1');
    // Fed one byte at a time: every split of the framing is met.
    const r = bodyReader('GET', h({ chunked: true }));
    const data: Buffer[] = [];
    let done = false;
    let rest: Buffer | null = null;
    for (let i = 0; i < wire.length && !done; i++) {
      const step = r.feed(wire.subarray(i, i + 1));
      data.push(...step.data);
      done = step.done;
      if (done) rest = Buffer.concat([step.rest ?? Buffer.alloc(0), wire.subarray(i + 1)]);
    }
    assert.equal(Buffer.concat(data).toString(), 'hello, chunked!!');
    assert.equal(done, true);
    assert.equal(rest!.toString(), 'NEXT');
    assert.throws(() => bodyReader('GET', h({ chunked: true })).feed(Buffer.from('zz\r\n')), /malformed chunk size/);
    assert.throws(() => bodyReader('GET', h({ chunked: true })).feed(Buffer.from('2\r\nabc\r\n')), /longer than its size/);
  });

  test('no body for HEAD, 204 and 304; a length ends there; without either the body runs to the close', () => {
    for (const [method, status] of [['HEAD', 200], ['GET', 204], ['GET', 304]] as const) {
      assert.deepEqual(bodyReader(method, h({ status, length: 10 })).feed(Buffer.alloc(0)), { data: [], done: true, rest: null });
    }
    const len = bodyReader('GET', h({ length: 4 }));
    const step = len.feed(Buffer.from('abcdef'));
    assert.deepEqual([Buffer.concat(step.data).toString(), step.done, step.rest?.toString()], ['abcd', true, 'ef']);
    const open = bodyReader('GET', h({}));
    assert.equal(open.feed(Buffer.from('x')).done, false);
    assert.equal(open.endOfStream(), true);
    assert.equal(bodyReader('GET', h({ length: 4 })).endOfStream(), false);
  });
});

/** A local server: each test sets `serve`; `connections` counts the TCP connections the relay opened. */
let serve: (req: IncomingMessage, res: ServerResponse) => void = (_q, res) => res.end();
let connections = 0;
const app: HttpServer = createHttpServer((req, res) => serve(req, res));
app.keepAliveTimeout = 10_000;
app.on('connection', () => connections++);
const appPort = new Promise<number>((resolve) => app.listen(0, '127.0.0.1', () => resolve((app.address() as AddressInfo).port)));

/** The browser's side: a server whose handler hands each request to the relay. */
function front(pool: () => RelayPool): Promise<{ port: number; server: HttpServer; errors: unknown[] }> {
  const errors: unknown[] = [];
  const server = createHttpServer((req, res) => {
    pool()
      .exchange({ source: 'test', method: req.method!, path: req.url!, headers: { ...req.headers } as Record<string, string>, from: req }, res, (head) => {
        const out: string[] = [];
        for (let i = 0; i < head.rawHeaders.length; i += 2) {
          const n = head.rawHeaders[i].toLowerCase();
          if (n === 'connection' || n === 'transfer-encoding' || n === 'keep-alive' || (n === 'content-length' && head.length === null)) continue;
          out.push(head.rawHeaders[i], head.rawHeaders[i + 1]);
        }
        return out;
      })
      .catch((err: unknown) => {
        errors.push(err);
        if (!res.headersSent && !(err instanceof RelayError && err.answered)) res.writeHead(502, { 'content-type': 'text/plain' }).end(`relay: ${(err as Error).message}`);
        else res.destroy();
      });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ port: (server.address() as AddressInfo).port, server, errors })));
}

interface Got { status: number; headers: IncomingMessage['headers']; body: Buffer; trailers?: unknown }
function get(port: number, path: string, o: { method?: string; headers?: Record<string, string>; body?: Buffer | Buffer[] } = {}): Promise<Got> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method: o.method ?? 'GET', headers: o.headers, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(parts) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    if (Array.isArray(o.body)) for (const b of o.body) req.write(b);
    else if (o.body) req.write(o.body);
    req.end();
  });
}

const opened: Socket[] = [];
const toApp = async () => {
  const port = await appPort;
  return new Promise<Socket>((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => resolve(s));
    s.once('error', reject);
    opened.push(s);
  });
};

describe('the relay against a real HTTP server', () => {
  let pool = relayPool(toApp, LIMITS);
  const fronted = front(() => pool);
  /** A new pool (no idle stream from an earlier test), and the app's connections counted from 0. */
  const fresh = () => {
    pool.close();
    pool = relayPool(toApp, LIMITS);
    connections = 0;
  };
  after(async () => {
    pool.close();
    (await fronted).server.close();
    app.close();
    for (const s of opened) s.destroy();
  });

  test('a 24 MiB download with its length arrives whole, and the stream is reused for the next request', async () => {
    const blob = randomBytes(24 << 20);
    serve = (_q, res) => res.writeHead(200, { 'content-length': blob.length, 'x-app': 'yes' }).end(blob);
    fresh();
    const { port } = await fronted;
    const r = await get(port, '/big');
    assert.equal(r.status, 200);
    assert.equal(r.headers['x-app'], 'yes');
    assert.equal(r.headers['content-length'], String(blob.length));
    assert.equal(createHash('sha256').update(r.body).digest('hex'), createHash('sha256').update(blob).digest('hex'));
    await get(port, '/again');
    assert.equal(connections, 1, 'one connection to the app for both requests');
  });

  test('a chunked, streamed reply arrives as sent; its trailer-ended framing leaves the stream clean for reuse', async () => {
    serve = (_q, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', trailer: 'x-sum' });
      let n = 0;
      const t = setInterval(() => {
        res.write(`data: ${n}\n\n`);
        if (++n === 5) {
          clearInterval(t);
          res.addTrailers({ 'x-sum': '10' });
          res.end();
        }
      }, 5);
    };
    fresh();
    const { port } = await fronted;
    const r = await get(port, '/events');
    assert.equal(r.body.toString(), 'data: 0\n\ndata: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4\n\n');
    assert.equal(r.headers['transfer-encoding'], 'chunked', 'framed again for the browser');
    serve = (_q, res) => res.end('after');
    assert.equal((await get(port, '/next')).body.toString(), 'after');
    assert.equal(connections, 1);
  });

  test('HEAD, 204 and 304 have no body; the stream goes on', async () => {
    const { port } = await fronted;
    serve = (req, res) => {
      if (req.url === '/204') return res.writeHead(204).end();
      if (req.url === '/304') return res.writeHead(304, { etag: '"x"' }).end();
      res.writeHead(200, { 'content-length': 1000 }).end(req.method === 'HEAD' ? undefined : Buffer.alloc(1000));
    };
    fresh();
    const head = await get(port, '/h', { method: 'HEAD' });
    assert.deepEqual([head.status, head.headers['content-length'], head.body.length], [200, '1000', 0]);
    assert.equal((await get(port, '/204')).status, 204);
    assert.deepEqual([(await get(port, '/304')).status], [304]);
    assert.equal((await get(port, '/x')).body.length, 1000);
    assert.equal(connections, 1);
  });

  test('an upload with a length, and a chunked one framed again: the app gets every byte', async () => {
    serve = (req, res) => {
      const h = createHash('sha256');
      let n = 0;
      req.on('data', (c: Buffer) => {
        h.update(c);
        n += c.length;
      });
      req.on('end', () => res.end(JSON.stringify({ n, sha: h.digest('hex'), te: req.headers['transfer-encoding'] ?? null })));
    };
    const { port } = await fronted;
    const blob = randomBytes(9 << 20);
    const sha = createHash('sha256').update(blob).digest('hex');
    const sized = await get(port, '/up', { method: 'POST', headers: { 'content-length': String(blob.length) }, body: blob });
    assert.deepEqual(JSON.parse(sized.body.toString()), { n: blob.length, sha, te: null });
    const chunked = await get(port, '/up', { method: 'POST', headers: { 'transfer-encoding': 'chunked' }, body: [blob.subarray(0, 1000), blob.subarray(1000)] });
    assert.deepEqual(JSON.parse(chunked.body.toString()), { n: blob.length, sha, te: 'chunked' });
  });

  test('Expect: 100-continue: the interim reply is the hop\'s, the final one reaches the browser', async () => {
    serve = (req, res) => {
      let n = 0;
      req.on('data', (c: Buffer) => (n += c.length));
      req.on('end', () => res.end(`got ${n}`));
    };
    const { port } = await fronted;
    const r = await get(port, '/c', { method: 'PUT', headers: { expect: '100-continue', 'content-length': '5' }, body: Buffer.from('12345') });
    assert.deepEqual([r.status, r.body.toString()], [200, 'got 5']);
  });

  test('Connection: close from the app: that stream is not reused', async () => {
    serve = (_q, res) => res.writeHead(200, { connection: 'close', 'content-length': 2 }).end('ok');
    fresh();
    const { port } = await fronted;
    await get(port, '/1');
    await get(port, '/2');
    assert.equal(connections, 2);
  });

  test('a kept-alive stream the app closed while idle: the next GET goes on a new one, answered', async () => {
    serve = (req, res) => {
      res.end('one');
      // The app drops the connection right after its answer, without saying so.
      res.once('finish', () => setTimeout(() => req.socket.destroy(), 20));
    };
    fresh();
    const { port } = await fronted;
    assert.equal((await get(port, '/a')).body.toString(), 'one');
    await new Promise((r) => setTimeout(r, 100));
    serve = (_q, res) => res.end('two');
    assert.equal((await get(port, '/b')).body.toString(), 'two');
    assert.equal(connections, 2);
  });

  test('past maxStreams a request waits for a stream to come free, then is served on it', async () => {
    pool.close();
    pool = relayPool(toApp, { ...LIMITS, maxStreams: 1 });
    connections = 0;
    let open = 0;
    let most = 0;
    serve = (req, res) => {
      most = Math.max(most, ++open);
      setTimeout(() => {
        open--;
        res.end(req.url);
      }, 50);
    };
    const { port } = await fronted;
    const got = await Promise.all(['/1', '/2', '/3'].map((p) => get(port, p)));
    assert.deepEqual(got.map((g) => g.body.toString()), ['/1', '/2', '/3']);
    assert.deepEqual([connections, most], [1, 1]);
  });

  test('the browser leaves mid-download: the stream is closed, not pooled; the next request is served', async () => {
    const big = Buffer.alloc(64 << 20);
    serve = (_q, res) => res.writeHead(200, { 'content-length': big.length }).end(big);
    const { port, errors } = await fronted;
    const before = errors.length;
    await new Promise<void>((resolve) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: '/big', agent: false }, (res) => {
        res.once('data', () => {
          req.destroy();
          setTimeout(resolve, 200);
        });
      });
      req.on('error', () => undefined);
      req.end();
    });
    assert.equal(errors.length, before + 1);
    assert.match(String((errors.at(-1) as Error).message), /browser went away/);
    serve = (_q, res) => res.end('still here');
    assert.equal((await get(port, '/x')).body.toString(), 'still here');
  });
});

describe('apps that do not speak HTTP properly: a 502, never a crash', () => {
  let raw: (s: Socket) => void = (s) => s.end();
  const tcp: TcpServer = createTcpServer((s) => raw(s));
  const tcpPort = new Promise<number>((resolve) => tcp.listen(0, '127.0.0.1', () => resolve((tcp.address() as AddressInfo).port)));
  const pool = relayPool(async () => {
    const port = await tcpPort;
    return new Promise<Socket>((resolve, reject) => {
      const s = connect(port, '127.0.0.1', () => resolve(s));
      s.once('error', reject);
    });
  }, LIMITS);
  const fronted = front(() => pool);
  after(async () => {
    pool.close();
    (await fronted).server.close();
    tcp.close();
  });

  for (const [what, reply, expect] of [
    ['not HTTP at all', 'SSH-2.0-OpenSSH_9.2\r\n\r\n', /did not answer in HTTP\/1\.x/],
    ['a closed connection without a word', '', /closed the connection without answering/],
    ['a folded header', 'HTTP/1.1 200 OK\r\nA: 1\r\n folded\r\n\r\n', /malformed header line/],
    ['a bad chunk size', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', /malformed chunk size/],
  ] as const) {
    test(what, async () => {
      raw = (s) => s.once('data', () => s.end(reply));
      const { port, errors } = await fronted;
      if (what === 'a bad chunk size') {
        // The head was already passed on: the browser's reply is cut, as a proxy must.
        await assert.rejects(get(port, '/'), /aborted|socket hang up|ECONNRESET/);
      } else {
        const r = await get(port, '/');
        assert.equal(r.status, 502);
        assert.match(r.body.toString(), expect);
      }
      assert.match(String((errors.at(-1) as Error).message), expect);
    });
  }

  test('a reply cut short before its length: the browser\'s reply is cut too', async () => {
    raw = (s) => s.once('data', () => s.end('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b'));
    const { port } = await fronted;
    await assert.rejects(get(port, '/'), /aborted|socket hang up|ECONNRESET/);
  });
});
