// Threat: connection exhaustion without a key (issue 29 item 18). A client opens connections and sends half a
// request, or nothing, and each is held as long as the server waits for the rest: about 21,000 of them reached the
// process's open-file limit and every new connection was reset. Covered: one address's flood closes past its cap while
// another client is answered; the total cap; a half-sent request's headers and body cut after their timeouts with a
// 408; the per-address count follows sockets (keep-alive counts once, a closed one frees its slot); long replies (an
// event stream, an agent's long-poll) outlive the request timeout. The caps and timeouts are set small here, so that
// a few hundred real sockets on loopback show what 21,000 would.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { pino, type Logger } from 'pino';
import { createTestApp, DIALECTS, type TestApp } from './helpers/harness.js';
import { hostWithMachine } from './agent-server-fixtures.js';
import { defaultMaxConnections, openFileLimit, sourceKey } from '../src/platform/connection-limits.js';

/** The most any scenario here may take; past it the test fails instead of hanging (the unfixed server holds forever). */
const DEADLINE_MS = 20_000;
/**
 * Linux answers the whole of 127.0.0.0/8 on loopback: a socket bound to this address reaches the server on
 * 127.0.0.1 as a second client address, without leaving the machine.
 */
const OTHER_LOOPBACK = '127.0.0.2';
/** Node checks its timeouts four times a period (connection-limits.ts): a cut may come up to a quarter late. */
const CHECK_SLACK = 1.25;
/** Scheduling on a loaded machine, on top of that. */
const SLACK_MS = 1500;

/** A logger that keeps its warnings, to count them: a flood must write a line, not a line per socket. */
function warnings(): { log: Logger; lines: Array<{ msg: string; source?: string; max?: number }> } {
  const lines: Array<{ msg: string }> = [];
  return { lines, log: pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) }) };
}

function within<T>(what: string, p: Promise<T>, ms = DEADLINE_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)));
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

async function listening(t: TestApp): Promise<number> {
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  return (t.app.server.address() as { port: number }).port;
}

/** The test's own sockets still open: a failed test ends them, or the app's close would wait for them forever. */
const opened = new Set<Socket>();

/** Ends the test's sockets, then the app. */
async function closeAll(t: TestApp): Promise<void> {
  for (const s of opened) s.destroy();
  await t.close();
}

interface Held {
  /** Resolves when the server has closed the connection: what it sent, and how long after connecting. */
  closed: Promise<{ data: string; ms: number }>;
}

/** A connection that sends `bytes` (half a request, or nothing) and then waits, as the attack does. */
function hold(port: number, bytes: string, localAddress?: string): Held {
  const start = performance.now();
  const socket: Socket = connect({ port, host: '127.0.0.1', localAddress }, () => bytes && socket.write(bytes));
  opened.add(socket);
  socket.once('close', () => opened.delete(socket));
  let data = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk) => (data += chunk));
  // A socket the server closes at once may be reset under the client's write: a close like any other here.
  socket.on('error', () => undefined);
  return { closed: new Promise((resolve) => socket.on('close', () => resolve({ data, ms: performance.now() - start }))) };
}

/** One whole request on a fresh connection, `Connection: close`: the status line, or '' when closed unanswered. */
function exchange(port: number, path: string, key: string, localAddress?: string): Promise<string> {
  const held = hold(port, `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nConnection: close\r\n\r\n`, localAddress);
  return held.closed.then(({ data }) => data.split('\r\n')[0]);
}

/** Resolves once `n` of `closes` resolved with nothing received (refused as accepted). */
function refusals(closes: Promise<{ data: string }>[], n: number): Promise<void> {
  let seen = 0;
  return new Promise((resolve) => {
    for (const c of closes) void c.then(({ data }) => data === '' && ++seen === n && resolve());
  });
}

function assertTimedOut(out: { data: string; ms: number }, timeoutS: number): void {
  const [head, body] = out.data.split('\r\n\r\n');
  assert.match(head, /^HTTP\/1\.1 408 /, out.data);
  assert.deepEqual(JSON.parse(body), { success: false, error: 'request_timeout', msg: 'the request did not arrive in time' });
  assert.ok(out.ms >= timeoutS * 1000 - 50, `cut after ${Math.round(out.ms)} ms, not before the ${timeoutS} s timeout`);
  assert.ok(out.ms <= timeoutS * 1000 * CHECK_SLACK + SLACK_MS, `cut after ${Math.round(out.ms)} ms, soon after the ${timeoutS} s timeout`);
}

const HALF_HEADERS = 'GET /api/v0/users/current HTTP/1.1\r\nHost: x\r\n';

for (const dialect of DIALECTS) {
  test(`one address's flood of half-sent requests: past its cap its sockets close at once, another client is answered meanwhile, each held one gets 408 after the header timeout [${dialect}]`, async () => {
    const HEADERS_S = 3;
    const PER_SOURCE = 100;
    const FLOOD = 300;
    const logged = warnings();
    const t = await createTestApp(dialect, {
      log: logged.log,
      config: {
        GPUPLANE_HEADERS_TIMEOUT: String(HEADERS_S), GPUPLANE_REQUEST_TIMEOUT: String(HEADERS_S * 2),
        GPUPLANE_MAX_CONNECTIONS_PER_SOURCE: String(PER_SOURCE), GPUPLANE_CONNECTION_LIMIT_EXEMPT: 'none', GPUPLANE_MAX_CONNECTIONS: '1000',
      },
    });
    try {
      const port = await listening(t);
      const flood = Array.from({ length: FLOOD }, () => hold(port, HALF_HEADERS, OTHER_LOOPBACK).closed);
      let heldClosed = 0;
      for (const c of flood) void c.then(({ data }) => data !== '' && heldClosed++);
      await within('the sockets past the cap closed unanswered', refusals(flood, FLOOD - PER_SOURCE));
      assert.equal(t.connections.openFrom(OTHER_LOOPBACK), PER_SOURCE, 'the address holds exactly its cap');
      assert.deepEqual(logged.lines.map((l) => [l.source, l.max, l.msg]), [
        [OTHER_LOOPBACK, PER_SOURCE, `connections from ${OTHER_LOOPBACK} reached GPUPLANE_MAX_CONNECTIONS_PER_SOURCE (${PER_SOURCE}): its new ones are closed until some end`],
      ], 'one warning for the flood, not one per refused socket');

      // Another client, while the flood is held: answered every time.
      for (let i = 0; i < 5; i++) {
        const res = await fetch(`http://127.0.0.1:${port}/api/v0/users/current`, { headers: { authorization: `Bearer ${t.ownerKey}` } });
        assert.equal(res.status, 200);
        assert.equal((await res.json()).email, 'owner@gpuplane.local');
      }
      assert.equal(heldClosed, 0, 'answered while the flood was still held, not after the timeout freed it');

      const outcomes = await within('the held requests cut', Promise.all(flood));
      const held = outcomes.filter((o) => o.data !== '');
      assert.equal(held.length, PER_SOURCE);
      for (const out of held) assertTimedOut(out, HEADERS_S);
      // Its slots are free again.
      assert.equal(await within('a request from the flooding address', exchange(port, '/api/v0/users/current', t.ownerKey, OTHER_LOOPBACK)), 'HTTP/1.1 200 OK');
      assert.equal(t.connections.openFrom(OTHER_LOOPBACK), 0);
    } finally {
      await closeAll(t);
    }
  });
}

// The remaining scenarios are of the transport alone: the database takes no part, so SQLite only.
test('past GPUPLANE_MAX_CONNECTIONS new connections close at once, from an address without a cap of its own (loopback, by default); held ones free their slots at the header timeout', async () => {
  const MAX = 50;
  const logged = warnings();
  const t = await createTestApp('sqlite', { log: logged.log, config: { GPUPLANE_MAX_CONNECTIONS: String(MAX), GPUPLANE_HEADERS_TIMEOUT: '1', GPUPLANE_REQUEST_TIMEOUT: '2' } });
  try {
    const port = await listening(t);
    // Half of them send nothing at all: the header timeout runs from the connection's start.
    const flood = Array.from({ length: MAX + 30 }, (_, i) => hold(port, i % 2 ? HALF_HEADERS : '').closed);
    await within('the sockets past the total cap closed unanswered', refusals(flood, 30));
    assert.equal(t.connections.openFrom('127.0.0.1'), 0, 'loopback is exempt from the per-address cap by default');
    assert.equal(await exchange(port, '/api/v0/users/current', t.ownerKey), '', 'the total cap is a hard cap: refused too');
    assert.deepEqual(logged.lines.map((l) => l.msg), [`the server holds ${MAX} connections (GPUPLANE_MAX_CONNECTIONS): new ones are closed until some end`]);
    const held = (await within('the held connections cut', Promise.all(flood))).filter((o) => o.data !== '');
    assert.equal(held.length, MAX);
    for (const out of held) assertTimedOut(out, 1);
    assert.equal(await within('a request after the flood', exchange(port, '/api/v0/users/current', t.ownerKey)), 'HTTP/1.1 200 OK');
  } finally {
    await closeAll(t);
  }
});

test('a body that does not arrive in time: 408 after GPUPLANE_REQUEST_TIMEOUT, though its headers came at once', async () => {
  const t = await createTestApp('sqlite', { config: { GPUPLANE_HEADERS_TIMEOUT: '1', GPUPLANE_REQUEST_TIMEOUT: '2' } });
  try {
    const port = await listening(t);
    // With a key: a request without one is answered 401 before its body (and then cut at the same timeout).
    const body = `POST /api/v0/ssh/ HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.ownerKey}\r\nContent-Type: application/json\r\n`
      + 'Content-Length: 100\r\n\r\n{"ssh_key": "';
    assertTimedOut(await within('the half-sent body cut', hold(port, body).closed), 2);
  } finally {
    await closeAll(t);
  }
});

/** Reads one reply (with its Content-Length body) from a kept-alive socket: its status line. */
function nextReply(socket: Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    let data = '';
    const onData = (chunk: Buffer) => {
      data += chunk.toString('utf8');
      const end = data.indexOf('\r\n\r\n');
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(data)?.[1] ?? NaN);
      if (end < 0 || Buffer.byteLength(data) < end + 4 + length) return;
      socket.off('data', onData);
      resolve(data.split('\r\n')[0]);
    };
    socket.on('data', onData);
    socket.once('close', () => reject(new Error(`closed after ${JSON.stringify(data)}`)));
  });
}

test('the per-address count is of sockets: a kept-alive connection counts once however many requests, a closed one frees its slot', async () => {
  const CAP = 3;
  const t = await createTestApp('sqlite', { config: { GPUPLANE_MAX_CONNECTIONS_PER_SOURCE: String(CAP), GPUPLANE_CONNECTION_LIMIT_EXEMPT: 'none' } });
  try {
    const port = await listening(t);
    // The server's side of each socket: its close is the signal that the count went down (ours is counted first).
    const serverClosed: Promise<void>[] = [];
    t.app.server.on('connection', (s: Socket) => serverClosed.push(new Promise((resolve) => s.once('close', () => resolve()))));
    const request = `GET /api/v0/users/current HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.ownerKey}\r\n\r\n`;
    const kept: Socket[] = [];
    for (let i = 0; i < CAP; i++) {
      const s = connect(port, '127.0.0.1');
      opened.add(s);
      s.on('error', () => undefined);
      kept.push(s);
      for (let r = 0; r < 3; r++) {
        const reply = nextReply(s);
        s.write(request);
        assert.equal(await within('a kept-alive reply', reply), 'HTTP/1.1 200 OK');
      }
    }
    assert.equal(t.connections.openFrom('127.0.0.1'), CAP, `${CAP * 3} requests on ${CAP} connections count ${CAP}`);
    assert.equal(await within('one past the cap', exchange(port, '/api/v0/users/current', t.ownerKey)), '', 'closed unanswered');

    kept[0].end();
    await within('the server sees it closed', serverClosed[0]);
    assert.equal(t.connections.openFrom('127.0.0.1'), CAP - 1);
    assert.equal(await within('a new connection in the freed slot', exchange(port, '/api/v0/users/current', t.ownerKey)), 'HTTP/1.1 200 OK');
  } finally {
    await closeAll(t);
  }
});

test('replies that take longer than GPUPLANE_REQUEST_TIMEOUT are not cut: an event stream and an agent\'s long-poll', async () => {
  const t = await createTestApp('sqlite', { config: { GPUPLANE_HEADERS_TIMEOUT: '1', GPUPLANE_REQUEST_TIMEOUT: '1' } });
  try {
    const port = await listening(t);
    const { api_key } = await t.createUser();
    const host = await hostWithMachine(t, { list: false });
    const first = await t.request('GET', '/api/v0/agent/desired/', { key: host.machineKey });
    assert.equal(first.status, 200, first.raw);

    const start = performance.now();
    const [events, poll] = await within('both replies', Promise.all([
      // The stream ends itself after 2.5 s (`timeout`); until then it is a reply in progress.
      fetch(`http://127.0.0.1:${port}/api/v0/instances/events/?timeout=2.5`, { headers: { authorization: `Bearer ${api_key}` } })
        .then(async (res) => ({ status: res.status, text: await res.text(), ms: performance.now() - start })),
      fetch(`http://127.0.0.1:${port}/api/v0/agent/desired/?after=${first.body.version}&wait=2`, { headers: { authorization: `Bearer ${host.machineKey}` } })
        .then(async (res) => ({ status: res.status, body: await res.json(), ms: performance.now() - start })),
    ]));
    assert.equal(events.status, 200);
    assert.match(events.text, /^retry: \d+\n: listening/);
    assert.ok(events.ms >= 2500, `the stream ran its ${Math.round(events.ms)} ms to its own end`);
    assert.equal(poll.status, 200, JSON.stringify(poll.body));
    assert.equal(poll.body.version, first.body.version, 'held to the end of its wait: nothing changed');
    assert.ok(poll.ms >= 2000, `the long-poll was held ${Math.round(poll.ms)} ms`);
  } finally {
    // As main.ts closes: the desired-state change feed stops with the hub, before the database closes under it.
    t.services.instances.hub.close();
    await closeAll(t);
  }
});

test('the per-address key: IPv4 as is, IPv4-mapped IPv6 as its IPv4, IPv6 by its /64', () => {
  assert.equal(sourceKey('203.0.113.7'), '203.0.113.7');
  assert.equal(sourceKey('::ffff:203.0.113.7'), '203.0.113.7');
  assert.equal(sourceKey('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
  assert.equal(sourceKey('2001:db8:1:2:bbbb:cccc:dddd:eeee'), '2001:db8:1:2::/64', 'the same /64: one client');
  assert.equal(sourceKey('2001:0DB8:0001:0002::9'), '2001:db8:1:2::/64', 'written another way: the same key');
  assert.equal(sourceKey('2001:db8::1'), '2001:db8:0:0::/64');
  assert.equal(sourceKey('::1'), '0:0:0:0::/64');
  assert.equal(sourceKey('fe80::1%eth0'), 'fe80:0:0:0::/64');
  assert.notEqual(sourceKey('2001:db8:1:3::1'), sourceKey('2001:db8:1:2::1'));
});

test('the default total cap: four fifths of the open-file limit, at most 65,536; a fixed one where the limit is unknown', () => {
  assert.equal(defaultMaxConnections(20_000), 16_000);
  assert.equal(defaultMaxConnections(1_048_576), 65_536);
  assert.equal(defaultMaxConnections(undefined), 8192);
  const limits = 'Limit                     Soft Limit           Hard Limit           Units\nMax open files            20000                20000                files\n';
  assert.equal(openFileLimit(() => limits), 20_000);
  assert.equal(openFileLimit(() => { throw new Error('ENOENT'); }), undefined);
});
