// Replies of one event-loop turn written together (src/platform/turn-batch.ts, installReplySending): the sends of a
// turn run once it ends, in order, one scheduled flush for all; a send that throws is reported and the rest still
// run; over HTTP, replies to requests read in the same turn all arrive, each on its own connection.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import Fastify from 'fastify';
import { TurnBatch } from '../src/platform/turn-batch.js';
import { installReplySending } from '../src/platform/http.js';

/** A TurnBatch whose turn ends only when the test says so. */
function manualBatch() {
  const flushes: (() => void)[] = [];
  const errors: unknown[] = [];
  const batch = new TurnBatch((err) => errors.push(err), (flush) => flushes.push(flush));
  const endTurn = () => flushes.shift()!();
  return { batch, flushes, errors, endTurn };
}

test('sends added in one turn run together when it ends, in the order added', () => {
  const m = manualBatch();
  const ran: number[] = [];
  for (const i of [1, 2, 3]) m.batch.add(() => ran.push(i));
  assert.deepEqual(ran, [], 'nothing is sent before the turn ends');
  assert.equal(m.flushes.length, 1, 'one flush for the whole turn');
  m.endTurn();
  assert.deepEqual(ran, [1, 2, 3]);
});

test('a send added after a flush waits for the next one', () => {
  const m = manualBatch();
  const ran: string[] = [];
  m.batch.add(() => {
    ran.push('a');
    m.batch.add(() => ran.push('c'));
  });
  m.batch.add(() => ran.push('b'));
  m.endTurn();
  assert.deepEqual(ran, ['a', 'b']);
  assert.equal(m.flushes.length, 1);
  m.endTurn();
  assert.deepEqual(ran, ['a', 'b', 'c']);
});

test('a send that throws is reported and the sends after it still run', () => {
  const m = manualBatch();
  const ran: number[] = [];
  const boom = new Error('boom');
  m.batch.add(() => ran.push(1));
  m.batch.add(() => {
    throw boom;
  });
  m.batch.add(() => ran.push(3));
  m.endTurn();
  assert.deepEqual(ran, [1, 3]);
  assert.deepEqual(m.errors, [boom]);
});

test('the default turn end is the event loop check phase: a send runs after the current turn, not within it', async () => {
  const ran: string[] = [];
  const batch = new TurnBatch(() => {});
  batch.add(() => ran.push('sent'));
  await Promise.resolve();
  ran.push('microtasks done');
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(ran, ['microtasks done', 'sent']);
});

test('over HTTP: 20 requests on 20 connections at once all get their own replies, JSON typed exactly', async () => {
  const app = Fastify();
  installReplySending(app);
  app.get('/n/:n', async (request) => ({ n: Number((request.params as { n: string }).n) }));
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as { port: number };
  const agent = new http.Agent({ keepAlive: false, maxSockets: 64 });
  try {
    const get = (n: number) =>
      new Promise<{ type: string | undefined; body: string }>((resolve, reject) => {
        http
          .get({ host: '127.0.0.1', port, path: `/n/${n}`, agent }, (res) => {
            let body = '';
            res.setEncoding('utf8').on('data', (c) => (body += c)).on('end', () => resolve({ type: res.headers['content-type'], body }));
          })
          .on('error', reject);
      });
    const replies = await Promise.all(Array.from({ length: 20 }, (_, n) => get(n)));
    replies.forEach((r, n) => {
      assert.equal(r.type, 'application/json');
      assert.deepEqual(JSON.parse(r.body), { n });
    });
  } finally {
    agent.destroy();
    await app.close();
  }
});
