// Threat: a filter body built to exhaust the server (issue 29 item 21): values nested thousands of levels deep made
// JSON.stringify overflow the stack inside an error message (a 500 to anyone, with or without a key), and a
// shallower one came back as 36 KB of echoed brackets. Every search route must refuse nesting beyond a small bound
// before any other work on the body, and an error message repeats at most a short, named length of what was sent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { MAX_ECHO_CHARS, MAX_FILTER_DEPTH, echo, checkDepth } from '../src/offers/filter-input.js';

/** `levels` arrays, one inside the other, as JSON text (JSON.parse builds it without recursion). */
const nested = (levels: number, inner = '"RTX 4090"') => `${'['.repeat(levels)}${inner}${']'.repeat(levels)}`;
/** The longest message a refusal may carry: the text around an echo, plus the echo. */
const MAX_MSG = 400;

forEachDialect('deeply nested filters', (app) => {
  const refuse = async (method: string, url: string, body: string | undefined) => {
    const res = await app().request(method, url, { body, headers: { 'content-type': 'application/json' } });
    assert.equal(res.status, 400, `${method} ${url}: ${res.raw.slice(0, 200)}`);
    assert.equal(res.body.success, false);
    assert.equal(res.body.error, 'bad_request');
    assert.ok(res.body.msg.length <= MAX_MSG, `${res.body.msg.length} characters: ${res.body.msg.slice(0, 200)}`);
    return res.body.msg as string;
  };

  test('5,000 and 4,000 levels in gpu_name.eq are a short 400 (were a 500 and a 36 KB echo)', async () => {
    for (const levels of [5_000, 4_000, 100_000]) {
      const msg = await refuse('POST', '/api/v0/bundles/', `{"gpu_name": {"eq": ${nested(levels)}}}`);
      assert.match(msg, new RegExp(`^body: nested more than ${MAX_FILTER_DEPTH} levels deep`));
    }
  });

  test('every route that takes a filter bounds it: the new-style search, the older GET ?q=, launch_instance, order', async () => {
    await refuse('PUT', '/api/v0/search/asks/', `{"select_cols": ["*"], "q": {"num_gpus": {"in": ${nested(5_000, '1')}}}}`);
    await refuse('POST', '/api/v0/bundles/', `{"order": ${nested(5_000, '"score"')}}`);
    await refuse('GET', `/api/v0/bundles/?q=${encodeURIComponent(`{"gpu_name": {"eq": ${nested(20_000)}}}`)}`, undefined);
    await refuse('PUT', '/api/v0/launch_instance/', `{"image": "alpine", "disk": 10, "q": {"gpu_name": {"eq": ${nested(5_000)}}}}`);
    await refuse('POST', '/api/v0/volumes/search/', `{"disk_space": {"gte": ${nested(5_000, '1')}}}`);
    // Just past the bound is refused too; a real filter at the bound is served.
    await refuse('POST', '/api/v0/bundles/', `{"gpu_name": {"in": [${nested(MAX_FILTER_DEPTH - 2)}]}}`);
    const ok = await app().request('POST', '/api/v0/bundles/', { body: { gpu_name: { in: ['RTX 4090'] }, order: [['score', 'desc']] } });
    assert.equal(ok.status, 200, ok.raw);
  });

  test('a huge value is echoed cut to its named length, whatever its size or depth', async () => {
    const long = 'x'.repeat(200_000);
    for (const body of [
      { num_gpus: { eq: long } },
      { num_gpus: { in: [long] } },
      { [long]: { eq: 1 } },
      { num_gpus: { [long]: 1 } },
      { limit: long },
      { order: [[long, 'desc']] },
      { type: long },
      { num_gpus: { eq: Array.from({ length: 50_000 }, (_, i) => i) } },
      { gpu_name: { eq: `${long}4090` } },
    ]) {
      const msg = await refuse('POST', '/api/v0/bundles/', JSON.stringify(body));
      assert.ok(!msg.includes('x'.repeat(MAX_ECHO_CHARS + 1)), msg.slice(0, 200));
    }
  });

  test('Fastify\'s own JSON parsing of a deep body answers 400, never 500, with a __proto__ key deep inside too', async () => {
    // A __proto__ key makes the JSON parser walk the body (platform/http.ts): the walk must not recurse per level.
    await refuse('POST', '/api/v0/bundles/', nested(200_000, '{"__proto__": 1}'));
    await refuse('POST', '/api/v0/bundles/', `{"gpu_name": ${nested(200_000, '{"__proto__": {"eq": 1}}')}}`);
    const keyed = await app().request('POST', '/api/v0/instances/', { body: nested(200_000, '{"__proto__": 1}'), headers: { 'content-type': 'application/json' } });
    assert.ok(keyed.status < 500, keyed.raw.slice(0, 200));
  });
});

test('echo and checkDepth: bounded work whatever the input', () => {
  const deep = JSON.parse(nested(1_000_000));
  assert.throws(() => checkDepth(deep, 'body'), /nested more than 4 levels/);
  assert.equal(echo(deep), `${'['.repeat(MAX_ECHO_CHARS)}…`);
  assert.equal(echo('a'.repeat(10)), '"aaaaaaaaaa"');
  assert.equal(echo({ a: [1, null, true, 'x'] }), '{"a":[1,null,true,"x"]}');
  assert.equal(echo('y'.repeat(1_000_000)).length, MAX_ECHO_CHARS + 1);
  checkDepth({ a: { in: [1] }, order: [['x', 'asc']] }, 'body');
});
