/** The Billing page's logic (console/src/lib/billing.ts): range, spend per day by type, tree rows, CSV. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chargesCsv, csvField, lastDays, MAX_RANGE_DAYS, parseRange, rangeSeconds, spendPerDay, totalOf, treeRows, type Charge } from '../console/src/lib/billing.js';
import { dayLabel, dayOf, dollars, parseDay, utcTime } from '../console/src/lib/format.js';

const c = (type: string, amount: number, items: Charge[] = [], source: string | null = `${type}-1`): Charge => ({
  start: 0, end: 3600, type, source, description: `${type} charge`, amount, items,
});

test('a range of two dates: whole UTC days, both included, as the charges filter takes them', () => {
  const r = parseRange('2025-03-01', '2025-03-03');
  assert.ok(typeof r !== 'string');
  assert.equal(r.to - r.from, 2);
  assert.equal(dayLabel(r.from), '2025-03-01');
  const s = rangeSeconds(r);
  assert.equal(s.start, Date.parse('2025-03-01T00:00:00Z') / 1000);
  assert.equal(s.end, Date.parse('2025-03-04T00:00:00Z') / 1000 - 1);
});

test('a range with a mistake is words naming it', () => {
  assert.match(parseRange('2025-03-05', '2025-03-01') as string, /after the end/);
  assert.match(parseRange('yesterday', '2025-03-01') as string, /start date is not a date/);
  assert.match(parseRange('2025-01-01', '2025-12-31') as string, new RegExp(`at most ${MAX_RANGE_DAYS} days`));
  assert.ok(Number.isNaN(parseDay('2025-02-30x')));
});

test('the last n days end today', () => {
  const today = dayOf(Date.parse('2025-03-10T12:00:00Z') / 1000);
  assert.deepEqual(lastDays(today, 7), { from: today - 6, to: today });
});

test('spend per day sums each type on its day, every day of the range present, in exact cents', () => {
  const from = parseDay('2025-03-01');
  const perDay = new Map<number, Charge[]>([
    [from, [c('instance', 0.1), c('instance', 0.2), c('volume', 0.05)]],
    [from + 2, [c('serverless', 1.5), c('other', 9)]],
  ]);
  const rows = spendPerDay({ from, to: from + 2 }, perDay);
  assert.equal(rows.length, 3);
  assert.deepEqual(rows.map((r) => r.label), ['2025-03-01', '2025-03-02', '2025-03-03']);
  assert.equal(rows[0]!.instance, 0.3); // not 0.30000000000000004
  assert.equal(rows[0]!.volume, 0.05);
  assert.equal(rows[0]!.total, 0.35);
  assert.deepEqual([rows[1]!.instance, rows[1]!.volume, rows[1]!.serverless, rows[1]!.total], [0, 0, 0, 0]);
  assert.equal(rows[2]!.serverless, 1.5);
  assert.equal(rows[2]!.total, 1.5, 'an unknown type is not counted');
});

test('tree rows: children only under open entries, with their depth', () => {
  const tree = [c('serverless', 3, [c('serverless', 1, [c('gpu', 1, [], null)], 'workergroup-2'), c('serverless', 2, [], 'workergroup-3')], 'endpoint-1'), c('instance', 1)];
  assert.deepEqual(treeRows(tree, new Set()).map((r) => [r.key, r.depth, r.hasChildren]), [['0', 0, true], ['1', 0, false]]);
  assert.deepEqual(treeRows(tree, new Set(['0', '0.0'])).map((r) => [r.key, r.depth]), [['0', 0], ['0.0', 1], ['0.0.0', 2], ['0.1', 1], ['1', 0]]);
  assert.equal(totalOf(tree), 4);
});

test('CSV: a header, every entry and item, quoting and spreadsheet formulas defused', () => {
  assert.equal(csvField('a,b'), '"a,b"');
  assert.equal(csvField('say "hi"'), '"say ""hi"""');
  assert.equal(csvField('=HYPERLINK("x")'), `"'=HYPERLINK(""x"")"`);
  assert.equal(csvField('-0.5'), '-0.5');
  const csv = chargesCsv([c('instance', 0.25, [c('gpu', 0.25, [], null)], 'instance-7')]);
  const lines = csv.trimEnd().split('\r\n');
  assert.equal(lines[0], 'start,end,type,source,description,amount,parent');
  assert.equal(lines.length, 3);
  assert.equal(lines[1], '1970-01-01T00:00:00.000Z,1970-01-01T01:00:00.000Z,instance,instance-7,instance charge,0.250000,');
  assert.match(lines[2]!, /,gpu,,gpu charge,0\.250000,instance-7$/);
});

test('money and times: small amounts keep their digits; times are UTC', () => {
  assert.equal(dollars(1.5), '$1.50');
  assert.equal(dollars(0.0042), '$0.0042');
  assert.equal(dollars(-2), '-$2.00');
  assert.equal(utcTime(0), '1970-01-01 00:00 UTC');
  assert.equal(utcTime(null), '—');
});
