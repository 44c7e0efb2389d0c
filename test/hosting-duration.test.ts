// The `duration` text of `list machine -l` (client-compat-more.md: "3 months", "2 weeks", "86400" seconds).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseDuration } from '../src/hosting/hosting-duration.js';
import { HOURS_PER_MONTH } from '../src/platform/money.js';

test('amounts with units, plain seconds, and what is refused', () => {
  const cases: [string | number, number | undefined][] = [
    ['86400', 86_400],
    ['3 months', 3 * HOURS_PER_MONTH * 3600],
    ['2 weeks', 14 * 86_400],
    ['1 week', 7 * 86_400],
    ['10 days', 864_000],
    ['1d', 86_400],
    ['12 hours', 43_200],
    ['1.5 hours', 5400],
    ['30 minutes', 1800],
    ['1 year', 365 * 86_400],
    ['  2 Weeks ', 14 * 86_400],
    [3600, 3600],
    ['soon', undefined],
    ['0', undefined],
    ['-5 days', undefined],
    ['3 fortnights', undefined],
    ['', undefined],
    [0, undefined],
    [Number.NaN, undefined],
  ];
  for (const [text, seconds] of cases) assert.equal(parseDuration(text), seconds, JSON.stringify(text));
});
