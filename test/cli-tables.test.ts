// Tables fit the width of the output: the least useful columns are left out (and named) until the table fits, in
// their usual order; `--columns` chooses them (`-o` too, except on search commands, where `-o` is the vastai client's
// --order). Unit tests of the fitting with an injected width, then the CLI run in the test's process (COLUMNS sets the width).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ALL_COLUMNS, outputWidth, renderTable, type Column } from '../src/cli/output.js';
import { offerColumns } from '../src/cli/commands/offers.js';
import { useServer } from './cli-helpers.js';

const columns: Column[] = [
  { key: 'id', header: 'ID', align: 'right', rank: 0 },
  { key: 'wide', header: 'Wide', rank: 3 },
  { key: 'name', header: 'Name', rank: 1 },
  { key: 'price', header: '$/hr', rank: 2, name: 'dph' },
];
const rows = [
  { id: 1, wide: 'x'.repeat(30), name: 'alpha', price: 0.5 },
  { id: 22, wide: 'y', name: 'beta', price: 1.25 },
];
const lines = (text: string) => text.split('\n');
const headerWords = (text: string) => lines(text)[0].trim().split(/\s{2,}/);

describe('fitting a table to a width', () => {
  test('no width: every column; a wide enough width: every column and no note', () => {
    assert.deepEqual(headerWords(renderTable(rows, columns)), ['ID', 'Wide', 'Name', '$/hr']);
    const fits = renderTable(rows, columns, { width: 60 });
    assert.deepEqual(headerWords(fits), ['ID', 'Wide', 'Name', '$/hr']);
    assert.equal(lines(fits).length, 3, 'no note');
  });

  test('too narrow: the least useful columns go first, the rest keep their order, and a note names the ones left out', () => {
    const t = renderTable(rows, columns, { width: 20, choosable: true });
    assert.deepEqual(headerWords(t), ['ID', 'Name', '$/hr']);
    const [header, ...rest] = lines(t);
    assert.ok([header, ...rest.slice(0, 2)].every((l) => l.length <= 20), t);
    assert.match(rest.slice(2).join(' '), /^\(left out to fit 20 columns: wide; choose with --columns NAME,NAME,… or --columns all\)$/);
    for (const l of rest.slice(2)) assert.ok(l.length <= 20, `the note is wrapped too: ${JSON.stringify(l)}`);

    const narrower = renderTable(rows, columns, { width: 12 });
    assert.deepEqual(headerWords(narrower), ['ID', 'Name']);
    assert.match(lines(narrower).slice(3).join(' '), /wide, dph; --raw prints every field\)$/, 'without --columns, --raw is the way');
  });

  test('the most useful column stays even when it alone is wider', () => {
    assert.deepEqual(headerWords(renderTable(rows, columns, { width: 1 })), ['ID']);
  });

  test('--columns: those columns in that order whatever the width (names, not headers); all: every column', () => {
    assert.deepEqual(headerWords(renderTable(rows, columns, { width: 10, columns: ['dph', 'id'] })), ['$/hr', 'ID']);
    assert.deepEqual(headerWords(renderTable(rows, columns, { width: 10, columns: ALL_COLUMNS })), ['ID', 'Wide', 'Name', '$/hr']);
  });

  test('the width: COLUMNS first (as the vastai client), then the terminal; no limit on a pipe or file', () => {
    assert.equal(outputWidth({ isTTY: true, columns: 100 }, { COLUMNS: '72' }), 72);
    assert.equal(outputWidth({ isTTY: true, columns: 100 }, {}), 100);
    assert.equal(outputWidth({ isTTY: true, columns: 100 }, { COLUMNS: 'wide' }), 100, 'a COLUMNS that is not a width is ignored');
    assert.equal(outputWidth({ isTTY: false, columns: undefined }, {}), undefined);
  });

  test('offers keep what is rented, its price and its direct ports first', () => {
    const ranked = [...offerColumns(false)].sort((a, b) => a.rank! - b.rank!).map((c) => c.name ?? c.key);
    assert.deepEqual(ranked.slice(0, 7), ['id', 'gpu_name', 'num_gpus', 'dph_total', 'gpu_ram', 'reliability', 'direct_port_count']);
    assert.equal(new Set(offerColumns(false).map((c) => c.rank)).size, offerColumns(false).length, 'one rank each');
    assert.ok(offerColumns(false).every((c) => c.rank! >= 0), 'every column is ranked');
  });
});

describe('the CLI', () => {
  const server = useServer();
  const cli = server.cli;

  test('search offers fits COLUMNS=80 (the whole table is 185 wide), -o still orders, --columns chooses', async () => {
    const narrow = await cli(['search', 'offers', 'num_gpus=1', '-o', 'dph_total', '--limit', '5'], { COLUMNS: '80' });
    assert.equal(narrow.code, 0, narrow.stderr);
    const out = lines(narrow.stdout.trimEnd());
    assert.ok(out.every((l) => l.length <= 80), narrow.stdout);
    assert.deepEqual(headerWords(narrow.stdout).slice(0, 4), ['ID', 'N', 'Model', 'VRAM GB']);
    assert.ok(headerWords(narrow.stdout).includes('$/hr') && headerWords(narrow.stdout).includes('Ports'));
    assert.match(narrow.stdout, /\(left out to fit 80 columns: .*machine_id/s);

    const wide = await cli(['search', 'offers', 'num_gpus=1', '-o', 'dph_total', '--limit', '5']);
    assert.equal(headerWords(wide.stdout).length, 22, 'no width without a terminal or COLUMNS: every column');

    const chosen = await cli(['search', 'offers', 'num_gpus=1', '-o', 'dph_total', '--limit', '5', '--columns', 'dph_total,id'], { COLUMNS: '80' });
    assert.equal(chosen.code, 0, chosen.stderr);
    assert.deepEqual(headerWords(chosen.stdout), ['$/hr', 'ID']);
    const prices = lines(chosen.stdout.trimEnd()).slice(1).map((l) => Number(l.trim().split(/\s+/)[0]));
    assert.equal(prices.length, 5);
    assert.deepEqual(prices, [...prices].sort((a, b) => a - b), '-o dph_total sorted them');
  });

  test('-o/--columns on show instances; unknown names are a usage error naming the columns, before anything is sent', async () => {
    const r = await cli(['show', 'instances', '-o', 'id,actual_status']);
    assert.equal(r.code, 0, r.stderr);
    const bad = await cli(['show', 'instances', '--columns', 'id,colour'], { GPUPLANE_URL: 'http://127.0.0.1:1' });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /unknown column colour; the columns are id,machine_id,actual_status/);
    const badOffers = await cli(['search', 'offers', '--columns', 'gpu'], { GPUPLANE_URL: 'http://127.0.0.1:1' });
    assert.equal(badOffers.code, 2);
  });
});
