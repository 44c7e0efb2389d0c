// The agent's `terminal` tunnel target (issue 32 item 3; src/agent/terminal.ts) against a real busybox container made
// as the agent makes it: each connection to a loopback port crosses an HTTP/2 CONNECT stream into the data plane's
// handle(), as the tunnel carries it, and speaks terminal-wire.ts's frames. A login shell on a TTY with
// TERM=xterm-256color, input and resize applied in order (`stty size` after a resize sees it), the exit status as the
// `exit` trailer, the shell hung up when the stream closes, a bad frame ends the session, refusals before the stream
// is used. Docker must be there: without it this file fails, it never skips.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { Fixture, type Listener } from './helpers/agent-ssh-fixture.js';
import { StreamRefusal } from '../src/agent/agent-data-plane.js';
import { encodeTerminalFrame, inputFrames, TERMINAL_FRAME_MAX } from '../src/protocol/terminal-wire.js';

const fx = new Fixture();
const ID = 5100 + Math.floor(Math.random() * 1000);
let container = '';
let l: Listener;

/** A terminal over the tunnel-like stream: what it printed so far, and ways to type and wait. */
interface Term {
  sock: Socket;
  out(): string;
  type(text: string): void;
  resize(rows: number, cols: number): void;
  /** Until the output (since `from`) matches. */
  until(re: RegExp, from?: number, ms?: number): Promise<string>;
  closed: Promise<void>;
}

function openTerm(port: number): Promise<Term> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, '127.0.0.1');
    let out = '';
    const waiters: (() => void)[] = [];
    sock.on('data', (d: Buffer) => {
      out += d.toString('utf8');
      for (const w of [...waiters]) w();
    });
    const closed = new Promise<void>((r) => sock.once('close', () => r()));
    sock.once('error', reject);
    sock.once('connect', () => resolve({
      sock,
      out: () => out,
      type: (text) => {
        for (const f of inputFrames(Buffer.from(text))) sock.write(f);
      },
      resize: (rows, cols) => sock.write(encodeTerminalFrame({ type: 'resize', rows, cols })),
      until: (re, from = 0, ms = 20_000) => new Promise((res, rej) => {
        const timer = setTimeout(() => rej(new Error(`not seen ${re} within ${ms} ms; output (its end): ${JSON.stringify(out.slice(from).slice(-2000))}`)), ms);
        const check = () => {
          const m = re.exec(out.slice(from));
          if (!m) return;
          clearTimeout(timer);
          waiters.splice(waiters.indexOf(check), 1);
          res(m[0]);
        };
        waiters.push(check);
        check();
      }),
      closed,
    }));
  });
}

before(async () => {
  await fx.setup();
  container = await fx.startInstance(ID, []);
  l = await fx.listenHttp2({ kind: 'terminal', instanceId: ID });
});

after(() => fx.teardown());

test('a login shell on a TTY: output, TERM, root, resize applied before the input after it, exit status as the trailer', async () => {
  const t = await openTerm(l.port);
  t.resize(30, 100);
  t.type('echo "answer-$((6*7))"; echo "term=$TERM shell=$SHELL uid=$(id -u) home=$HOME"; tty\n');
  await t.until(/answer-42/);
  await t.until(/term=xterm-256color shell=\/bin\/sh uid=0 home=\/root/);
  await t.until(/\/dev\/pts\/\d+/);
  const mark = t.out().length;
  t.type('stty size\n');
  await t.until(/\r\n30 100\r\n/, mark);
  // The resize and the line after it are sent together: the line runs only once the TTY has the new size.
  const mark2 = t.out().length;
  t.resize(44, 132);
  t.type('stty size\n');
  await t.until(/\r\n44 132\r\n/, mark2);
  const before = l.ends.length;
  t.type('exit 7\n');
  await t.closed;
  for (let i = 0; i < 100 && l.ends.length === before; i++) await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(l.ends.at(-1), { endpoint: 'terminal', exit: '7' });
  // Nothing typed is in the agent's log; the session's line is.
  const logged = fx.log.lines.filter((x) => x.includes('terminal session ended'));
  assert.ok(logged.some((x) => x.includes('"exit":"7"') && x.includes(`"instance_id":${ID}`)), fx.log.lines.join('\n'));
  assert.ok(!fx.log.lines.some((x) => x.includes('answer-') || x.includes('stty')), fx.log.lines.join('\n'));
});

test('a paste longer than one frame arrives whole, in order', async () => {
  const t = await openTerm(l.port);
  t.resize(24, 80);
  // `cat > file` on a TTY reads lines; a few hundred KB of them, then the line count and bytes.
  const line = 'x'.repeat(99) + '\n';
  const lines = Math.ceil((3 * TERMINAL_FRAME_MAX) / line.length);
  t.type('stty -echo; cat > paste\n');
  await new Promise((r) => setTimeout(r, 300));
  t.type(line.repeat(lines));
  t.type('\x04');
  t.type('stty echo; wc -lc < paste | tr -s " " ; exit\n');
  await t.until(new RegExp(`${lines} ${lines * line.length}`), 0, 60_000);
  await t.closed;
});

test("the shell and its foreground command are hung up when the stream closes (the page was closed)", async () => {
  const t = await openTerm(l.port);
  t.type('echo started; sleep 4545\n');
  await t.until(/started/);
  const ps = () => fx.exec(container, 'ps -o args');
  for (let i = 0; i < 100 && !/sleep 4545/.test(await ps()); i++) await new Promise((r) => setTimeout(r, 50));
  assert.match(await ps(), /sleep 4545/);
  t.sock.destroy();
  for (let i = 0; i < 200 && /sleep 4545/.test(await ps()); i++) await new Promise((r) => setTimeout(r, 100));
  assert.doesNotMatch(await ps(), /sleep 4545/);
});

test('a malformed frame ends the session', async () => {
  const t = await openTerm(l.port);
  t.type('echo ready\n');
  await t.until(/ready/);
  const bad = Buffer.alloc(5);
  bad[0] = 9;
  t.sock.write(bad);
  await t.closed;
});

test('refusals before the stream is used: an instance not on this host (404), a stopped container (502)', async () => {
  const other = await fx.listen({ kind: 'terminal', instanceId: ID + 1 });
  const s = connect(other.port, '127.0.0.1');
  await new Promise((r) => s.once('close', r));
  assert.equal(other.refusals.length, 1);
  assert.ok(other.refusals[0] instanceof StreamRefusal);
  assert.equal((other.refusals[0] as StreamRefusal).status, 404);

  const stopped = ID + 2;
  const cid = await fx.startInstance(stopped, []);
  await fx.docker.getContainer(cid).stop({ t: 0 });
  const l2 = await fx.listen({ kind: 'terminal', instanceId: stopped });
  const s2 = connect(l2.port, '127.0.0.1');
  await new Promise((r) => s2.once('close', r));
  assert.equal(l2.refusals.length, 1);
  assert.equal((l2.refusals[0] as StreamRefusal).status, 502);
  assert.match(l2.refusals[0].message, /not running/);
});
