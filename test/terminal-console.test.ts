// The terminal page's logic without a browser (console/src/lib/terminal.ts) and the wire it shares with the server
// (src/terminal/terminal-contract.ts): the WebSocket's URL follows the page's scheme and host, the messages are what
// the server parses, every bad message is refused with a sentence, and what the page says when it closes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canReconnect, closedText, INPUT_CHUNK_CHARS, inputMessages, terminalMessage, terminalSocketUrl } from '../console/src/lib/terminal.js';
import { parseClientMessage, TERMINAL_CLOSE, TERMINAL_MESSAGE_MAX, TERMINAL_PATH } from '../src/terminal/terminal-contract.js';

test("the socket's URL: ws on http, wss on https, the page's own host, the API's path", () => {
  assert.equal(terminalSocketUrl({ protocol: 'http:', host: '127.0.0.1:8080' }, 7), 'ws://127.0.0.1:8080/api/v0/instances/7/terminal/');
  assert.equal(terminalSocketUrl({ protocol: 'https:', host: 'cloud.example' }, 42), 'wss://cloud.example/api/v0/instances/42/terminal/');
  assert.equal(TERMINAL_PATH.exec('/api/v0/instances/42/terminal/')?.[1], '42');
  assert.equal(TERMINAL_PATH.exec('/api/v0/instances/42/terminal')?.[1], '42');
  for (const p of ['/api/v0/instances/0/terminal/', '/api/v0/instances/x/terminal/', '/api/v0/instances/4/terminals/', '/api/v0/agent/tunnel/']) {
    assert.equal(TERMINAL_PATH.exec(p), null, p);
  }
});

test('the messages the page sends are the ones the server takes; bad ones get a sentence', () => {
  assert.deepEqual(parseClientMessage(terminalMessage({ type: 'input', data: 'ls -l\r' })), { type: 'input', data: 'ls -l\r' });
  assert.deepEqual(parseClientMessage(terminalMessage({ type: 'resize', rows: 40, cols: 120 })), { type: 'resize', rows: 40, cols: 120 });
  for (const bad of ['', 'not json', '[]', 'null', '"x"', '{}', '{"type":"input"}', '{"type":"input","data":5}', '{"type":"resize","rows":0,"cols":80}',
    '{"type":"resize","rows":24,"cols":1001}', '{"type":"resize","rows":2.5,"cols":80}', '{"type":"resize","rows":"24","cols":80}', '{"type":"exec","data":"x"}']) {
    const r = parseClientMessage(bad);
    assert.equal(typeof r, 'string', bad);
    assert.ok((r as string).length > 10, bad);
  }
});

test('what the page says when the terminal closes, and when it offers to reconnect', () => {
  assert.equal(closedText(1000, 'exit status 0', true), 'Closed: exit status 0.');
  assert.equal(closedText(TERMINAL_CLOSE.stopped, 'instance 7 stopped (stopping)', true), 'Closed: instance 7 stopped (stopping).');
  assert.match(closedText(1006, '', false), /could not be opened: you may be signed out, the instance may not be running/);
  assert.match(closedText(1006, '', true), /connection was lost \(code 1006\)/);
  assert.equal(canReconnect(1000), true);
  assert.equal(canReconnect(TERMINAL_CLOSE.hostLost), true);
  assert.equal(canReconnect(TERMINAL_CLOSE.destroyed), false);
  assert.equal(canReconnect(TERMINAL_CLOSE.signedOut), false);
});

test('a paste of any size goes as messages the server takes, whole and in order, an emoji never cut in two', () => {
  const paste = ('line of text 🙂 ' + 'x'.repeat(40) + '\n').repeat(60_000); // about 3.5 million characters
  const msgs = inputMessages(paste);
  assert.ok(msgs.length > 1);
  let joined = '';
  for (const m of msgs) {
    assert.ok(Buffer.byteLength(m) <= TERMINAL_MESSAGE_MAX, `${Buffer.byteLength(m)} bytes`);
    const parsed = parseClientMessage(m);
    assert.ok(typeof parsed !== 'string' && parsed.type === 'input');
    assert.ok(parsed.data.length <= INPUT_CHUNK_CHARS);
    // No lone surrogate at either end: each message is valid text on its own.
    assert.equal(Buffer.from(parsed.data, 'utf8').toString('utf8'), parsed.data);
    joined += parsed.data;
  }
  assert.equal(joined, paste);
  // An emoji across the boundary goes whole into the next message.
  const edge = inputMessages('a'.repeat(INPUT_CHUNK_CHARS - 1) + '🙂b').map((m) => (parseClientMessage(m) as { data: string }).data);
  assert.deepEqual(edge.map((d) => d.length), [INPUT_CHUNK_CHARS - 1, 3]);
  assert.equal(edge[1], '🙂b');
  assert.deepEqual(inputMessages(''), []);
  assert.deepEqual(inputMessages('ls\r'), [terminalMessage({ type: 'input', data: 'ls\r' })]);
});
