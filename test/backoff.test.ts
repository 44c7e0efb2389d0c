// The clients' retry pause (src/sdk/backoff.ts): doubling to a cap, each wait drawn from the upper half of its nominal
// value, so a fleet that failed together (10,000 agents after a server restart) does not retry together.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Backoff, backoffDelay } from '../src/sdk/backoff.js';

const AGENT_POLL = { firstMs: 1000, maxMs: 30_000 };

describe('backoff', () => {
  test('nominal waits double to the cap; each lies in [nominal / 2, nominal)', () => {
    const nominal = [1000, 2000, 4000, 8000, 16_000, 30_000, 30_000];
    nominal.forEach((n, attempt) => {
      assert.equal(backoffDelay(attempt, AGENT_POLL, () => 0), n / 2);
      assert.equal(backoffDelay(attempt, AGENT_POLL, () => 0.5), (3 * n) / 4);
      assert.ok(backoffDelay(attempt, AGENT_POLL, () => 0.999999) < n);
    });
    // Far past the cap, no overflow: still the cap's range.
    assert.equal(backoffDelay(5000, AGENT_POLL, () => 0), 15_000);
  });

  test('a Backoff steps through the attempts and starts over after reset()', () => {
    const b = new Backoff(AGENT_POLL, () => 0);
    assert.deepEqual([b.next(), b.next(), b.next()], [500, 1000, 2000]);
    b.reset();
    assert.equal(b.next(), 500);
  });

  test('10,000 agents failing at once spread their retries over the whole range at every step', () => {
    const agents = Array.from({ length: 10_000 }, () => new Backoff(AGENT_POLL));
    const at = new Array<number>(agents.length).fill(0);
    for (let step = 0; step < 7; step++) {
      const waits = agents.map((a) => a.next());
      const nominal = Math.min(AGENT_POLL.maxMs, AGENT_POLL.firstMs * 2 ** step);
      for (const w of waits) assert.ok(w >= nominal / 2 && w < nominal, `step ${step}: ${w} outside [${nominal / 2}, ${nominal})`);
      // Ten equal slices of the range: each holds about a tenth of the fleet (binomial: sd ≈ 30, so 800–1,200 is > 6 sd).
      const slices = new Array<number>(10).fill(0);
      for (const w of waits) slices[Math.floor(((w - nominal / 2) / (nominal / 2)) * 10)]++;
      for (const n of slices) assert.ok(n > 800 && n < 1200, `step ${step}: slices ${slices.join(' ')}`);
      // No two agents wait the same time (they would hit the server in the same instant).
      assert.equal(new Set(waits).size, waits.length);
      waits.forEach((w, i) => (at[i] += w));
    }
    // After seven failures the fleet's next tries spread over more than 20 s, not one instant.
    assert.ok(Math.max(...at) - Math.min(...at) > 20_000, `spread ${Math.max(...at) - Math.min(...at)} ms`);
  });
});
