// Large pre-serialized replies are sent as UTF-8 bytes from reused buffers (src/platform/reply-bytes.ts): the bytes
// are always exactly the text's, a buffer goes back for reuse only once its response has finished, and a text too
// large for a buffer gets bytes of its own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { replyBytes } from '../src/platform/reply-bytes.js';

const response = () => new EventEmitter() as unknown as ServerResponse;

test('the bytes are the text’s UTF-8 at every length around a buffer’s size, multi-byte characters included', () => {
  const size = 64;
  const bytes = replyBytes(size);
  for (const tail of ['', 'é', '€', '😀', 'a€😀']) {
    for (let len = size - 12; len <= size + 4; len++) {
      const text = 'x'.repeat(len) + tail;
      const res = response();
      const got = bytes.bytesFor(res, text);
      assert.ok(got.equals(Buffer.from(text, 'utf8')), `${len} + ${JSON.stringify(tail)}`);
      res.emit('finish');
    }
  }
});

test('a buffer is reused only after its response finished', () => {
  const bytes = replyBytes(1024);
  const first = response();
  const a = bytes.bytesFor(first, '{"offers":[1]}');
  const second = response();
  const b = bytes.bytesFor(second, '{"offers":[2]}');
  // Both in flight: two buffers, and neither reply's bytes were overwritten by the other.
  assert.notEqual(a.buffer, b.buffer);
  assert.equal(a.toString(), '{"offers":[1]}');
  assert.equal(bytes.kept(), 0);

  first.emit('finish');
  assert.equal(bytes.kept(), 1);
  const c = bytes.bytesFor(response(), '{"offers":[3]}');
  assert.equal(c.buffer, a.buffer, 'the finished response’s buffer serves the next reply');
  assert.equal(b.toString(), '{"offers":[2]}');

  // A response that ends without finishing (its client went away) keeps its buffer out of reuse.
  second.emit('close');
  assert.equal(bytes.kept(), 0);
});

test('a text larger than a buffer gets bytes of its own, and the buffer stays for reuse', () => {
  const bytes = replyBytes(64);
  const res = response();
  const text = '€'.repeat(100);
  const got = bytes.bytesFor(res, text);
  assert.ok(got.equals(Buffer.from(text, 'utf8')));
  assert.equal(bytes.kept(), 1);
  res.emit('finish');
  assert.equal(bytes.kept(), 1, 'nothing pooled goes back twice');
});
