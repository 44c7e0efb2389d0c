// Threat: offer search answers without a key (issue 29 item 1), so an anonymous caller must learn nothing of any
// account from it (no account's fields, no per-user price), and must not get around the per-address limit by rotating
// addresses within its own IPv6 /64, by IPv4-mapped IPv6, or make the limiter's memory grow without bound with a
// flood of source addresses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { VirtualClock } from '../src/platform/clock.js';
import { addressKey, anonymousSearchLimit, ANONYMOUS_SEARCH_WINDOW_S } from '../src/offers/anonymous-search-limit.js';
import { ApiError } from '../src/platform/errors.js';

/** Names that would be an account's, not an offer's. */
const ACCOUNT_FIELD = /^(user_id|team_id|email|username|full_name|credit|balance|api_key|key|ssh_key|billing|owner|instance_id|label|client_id|permissions)$|email|api_key|password|secret|credit/;

forEachDialect('anonymous offer search leaks nothing of an account', (app) => {
  test('offers carry no account field, and a renter with credit, instances and a scoped key changes nothing an anonymous caller sees', async () => {
    const search = () => app().app.inject({ method: 'POST', url: '/api/v0/bundles/', payload: { limit: 50 }, remoteAddress: '198.51.100.20' });
    const renter = await app().createUser({ credit: 500 });
    const before = await search();
    assert.equal(before.statusCode, 200);
    const offers = JSON.parse(before.body).offers as Record<string, unknown>[];
    assert.ok(offers.length > 0);
    for (const o of offers) {
      const leaked = Object.keys(o).filter((k) => ACCOUNT_FIELD.test(k));
      assert.deepEqual(leaked, [], `offer ${o.id}`);
    }
    // The renter's own search with a key is byte for byte what an anonymous caller gets: nothing is priced per user.
    const keyed = await app().request('POST', '/api/v0/bundles/', { key: renter.api_key, body: { limit: 50 } });
    assert.equal(keyed.raw, before.body);
    assert.doesNotMatch(before.body, new RegExp(renter.user.email.replace(/[.+]/g, '\\$&')));
  });
});

test('addresses in one IPv6 /64 share a count; IPv4-mapped IPv6 counts as the IPv4 address', () => {
  assert.equal(addressKey('2001:db8:1:2:aaaa::1'), addressKey('2001:db8:1:2:ffff:ffff:ffff:ffff'));
  assert.equal(addressKey('2001:db8:1:2::1'), '2001:db8:1:2::/64');
  assert.notEqual(addressKey('2001:db8:1:2::1'), addressKey('2001:db8:1:3::1'));
  assert.equal(addressKey('::ffff:192.0.2.1'), '192.0.2.1');
  assert.equal(addressKey('192.0.2.1'), '192.0.2.1');
  // 1,000,020 starts a minute (a multiple of 60); the clock is 20 s into it.
  const clock = new VirtualClock(1_000_040);
  const limit = anonymousSearchLimit(clock, 2);
  limit.take('2001:db8:1:2::1');
  limit.take('2001:db8:1:2::beef');
  assert.throws(() => limit.take('2001:db8:1:2:1:2:3:4'), (e: unknown) => e instanceof ApiError && e.code === 'rate_limited');
  // 40 s into its window: the header says when it ends.
  assert.throws(() => limit.take('2001:db8:1:2::1'), (e: unknown) => e instanceof ApiError && e.headers['Retry-After'] === '40');
  clock.set(1_000_020 + ANONYMOUS_SEARCH_WINDOW_S);
  limit.take('2001:db8:1:2::1');
});

test('a flood of distinct addresses is bounded: past the tracked maximum new addresses wait for the next window; known ones go on', () => {
  const clock = new VirtualClock(2_000_000);
  const limit = anonymousSearchLimit(clock, 5, 100);
  for (let i = 0; i < 100; i++) limit.take(`10.0.${i >> 8}.${i & 255}`);
  assert.throws(() => limit.take('10.9.9.9'), (e: unknown) => e instanceof ApiError && e.code === 'rate_limited');
  limit.take('10.0.0.1');
  clock.set(2_000_000 + ANONYMOUS_SEARCH_WINDOW_S);
  limit.take('10.9.9.9');
});
