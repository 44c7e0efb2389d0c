// The console's offer search form (console/src/lib/offer-filters.ts): the same strict query the CLI builds, with
// its units and defaults; the form's state round-trips through the URL; bad fields are reported per field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  buildSearch, cliCommand, DEFAULT_FORM, formFieldOfError, formFromParams, formToParams, queryText, regionItems, sortOf, toggleOrder,
  type OfferForm,
} from '../console/src/lib/offer-filters.js';
import { DEFAULT_OFFER_QUERY, parseOfferQuery, parseOrder } from '../src/cli/offer-query.js';
import { ONSTART_MAX_CHARS } from '../src/instances/instances-request.js';
import { ONSTART_LIMIT } from '../console/src/lib/rent.js';

const form = (f: Partial<OfferForm>): OfferForm => ({ ...DEFAULT_FORM, ...f });

test('an empty form is the CLI\'s default search: verified, rentable, unrented, not external, by score', () => {
  const r = buildSearch(DEFAULT_FORM);
  assert.deepEqual(r.search, { ...DEFAULT_OFFER_QUERY(), order: [['score', 'desc']], type: 'on-demand', limit: 200, allocated_storage: 5 });
  assert.equal(cliCommand(DEFAULT_FORM), 'gpuplane search offers');
});

test('every field becomes the comparison the CLI sends, with its units (GB → MB) and types', () => {
  const f = form({ gpu: 'RTX 4090', count: '2', gpuRam: '24', cpuRam: '64', maxPrice: '1.5', minReliability: '0.95', region: 'us, ca', type: 'bid', order: 'dph_total' });
  const r = buildSearch(f);
  assert.equal(r.errors, null);
  assert.deepEqual(r.search, {
    verified: { eq: true }, external: { eq: false }, rentable: { eq: true }, rented: { eq: false },
    gpu_name: { eq: 'RTX 4090' },
    num_gpus: { gte: 2 },
    gpu_ram: { gte: 24_000 },
    cpu_ram: { gte: 64_000 },
    dph_total: { lte: 1.5 },
    reliability: { gte: 0.95 },
    geolocation: { in: ['US', 'CA'] },
    order: [['dph_total', 'asc']],
    type: 'bid',
    limit: 200,
    allocated_storage: 5,
  });
  // Exactly what the CLI makes of the command the console shows.
  assert.equal(cliCommand(f), `gpuplane search offers '${queryText(f)}' --type bid -o 'dph_total'`);
  const cli = { ...parseOfferQuery(queryText(f), DEFAULT_OFFER_QUERY()), order: parseOrder('dph_total'), type: 'bid', limit: 200, allocated_storage: 5 };
  assert.deepEqual(r.search, cli);
});

test('"any host" drops the verified default, as verified=any does in the CLI', () => {
  const r = buildSearch(form({ verified: false }));
  assert.equal((r.search as Record<string, unknown>).verified, undefined);
  assert.deepEqual((r.search as Record<string, unknown>).rentable, { eq: true });
});

test('a value the CLI would refuse is an error on that field, and nothing is searched', () => {
  const r = buildSearch(form({ count: 'two', maxPrice: 'cheap', gpu: 'A100', order: 'nonsense' }));
  assert.equal(r.search, null);
  assert.match(r.errors!.count!, /num_gpus: "two" is not an integer/);
  assert.match(r.errors!.maxPrice!, /dph_total: "cheap" is not a number/);
  assert.match(r.errors!.order!, /unknown field "nonsense"/);
  assert.equal(r.errors!.gpu, undefined);
  assert.match(buildSearch(form({ count: '1.5' })).errors!.count!, /not an integer/);
});

test('the form round-trips through the URL, and the defaults leave it empty', () => {
  assert.equal(formToParams(DEFAULT_FORM).toString(), '');
  const f = form({ gpu: 'H100 SXM', count: '8', region: 'DE', verified: false, type: 'bid', order: 'dph_total-' });
  const p = formToParams(f);
  assert.equal(p.get('verified'), 'any');
  assert.deepEqual(formFromParams(new URLSearchParams(p.toString())), f);
  // Nonsense in a shared link falls back to the defaults for what cannot be one of the choices.
  assert.equal(formFromParams(new URLSearchParams('type=reserved')).type, 'on-demand');
});

test('sorting by a column header: ascending first, then descending; aria-sort follows', () => {
  assert.equal(toggleOrder('score-', 'dph_total'), 'dph_total');
  assert.equal(toggleOrder('dph_total', 'dph_total'), 'dph_total-');
  assert.equal(toggleOrder('dph_total-', 'dph_total'), 'dph_total');
  assert.equal(sortOf('dph_total', 'dph_total'), 'ascending');
  assert.equal(sortOf('dph_total-', 'dph_total'), 'descending');
  assert.equal(sortOf('score-', 'dph_total'), 'none');
});

test('the rent dialog\'s onstart limit is the server\'s (spec: Limits, 4048 characters)', () => {
  assert.equal(ONSTART_LIMIT, ONSTART_MAX_CHARS);
});

test('rent: env and port rows become the env object the CLI sends; a template\'s env string reads back into rows', async () => {
  const { emptyForm, envObject, parseEnvString, rentBody } = await import('../console/src/lib/rent.js');
  const rows = parseEnvString('-e TZ=UTC -e "MSG=hello world" -p 8080:8080 -p 5353:53/udp --junk');
  assert.deepEqual(rows, {
    env: [{ key: 'TZ', value: 'UTC' }, { key: 'MSG', value: 'hello world' }],
    ports: [{ host: '8080', container: '8080', proto: 'tcp' }, { host: '5353', container: '53', proto: 'udp' }],
  });
  assert.deepEqual(envObject(rows.env, rows.ports).env, { TZ: 'UTC', MSG: 'hello world', '-p 8080:8080': '1', '-p 5353:53/udp': '1' });
  assert.match(envObject([{ key: '1BAD', value: 'x' }], []).errors.env!, /not a name/);
  assert.match(envObject([], [{ host: '70000', container: '80', proto: 'tcp' }]).errors.ports!, /1 to 65535/);
  const base = { ...emptyForm(), image: 'pytorch/pytorch', disk: '10', onstart: 'echo hi' };
  // The default launch mode is SSH through the proxy, by its spec name (issue 32; the launch modes: console-rent).
  assert.deepEqual(rentBody(base, false).body, { disk: 10, runtype: 'ssh_proxy', image: 'pytorch/pytorch', onstart: 'echo hi' });
  assert.match(rentBody({ ...base, onstart: 'x'.repeat(4049) }, false).errors!.onstart!, /4049 characters; the limit is 4048/);
  assert.equal(rentBody({ ...base, onstart: 'x'.repeat(4048) }, false).errors, null);
  assert.match(rentBody(base, true).errors!.price!, /bid needs a price/);
  assert.equal(rentBody({ ...base, price: '0.2' }, true).body!.price, 0.2);
  assert.match(rentBody({ ...base, image: '' }, false).errors!.image!, /image is required/);
  assert.equal(rentBody({ ...base, image: '', templateHashId: 'abc' }, false).body!.template_hash_id, 'abc');
});

test('the Regions box takes country codes and region names (issue 29 item 4), as the CLI\'s geolocation', () => {
  assert.deepEqual(regionItems('us, ca'), ['US', 'CA']);
  assert.deepEqual(regionItems('US CA,de'), ['US', 'CA', 'DE']);
  assert.deepEqual(regionItems('North America, jp, europe'), ['North America', 'JP', 'europe']);
  const f = form({ region: 'North America, jp' });
  assert.equal(queryText(f), 'geolocation in [North_America,JP]');
  assert.deepEqual((buildSearch(f).search as Record<string, unknown>).geolocation, { in: ['North America', 'JP'] });
  // Neither a code nor a region: refused at the field, nothing searched (the server would take it as a whole place).
  const r = buildSearch(form({ region: 'US, Mars' }));
  assert.equal(r.search, null);
  assert.match(r.errors!.region!, /^"Mars" is neither a two-letter country code nor a region \(North_America, South_America, Europe, Asia, Oceania, Africa\)/);
});

test('a value that cannot match is refused at its field before sending; a server refusal names the field it belongs to (issue 29 item 5)', () => {
  const r = buildSearch(form({ minReliability: '99' }));
  assert.equal(r.search, null);
  assert.match(r.errors!.minReliability!, /reliability gte 99: cannot match: reliability is a fraction from 0 to 1/);
  assert.equal(buildSearch(form({ minReliability: '0.99' })).errors, null);
  // The server knows the GPU models; its refusal goes under the GPU field, others where they belong.
  assert.equal(formFieldOfError('gpu_name.eq: "RTX4090" cannot match: did you mean "RTX 4090"?'), 'gpu');
  assert.equal(formFieldOfError('reliability.gte: 99 cannot match: reliability is a fraction from 0 to 1'), 'minReliability');
  assert.equal(formFieldOfError('geolocation.in[0]: "Mars" …'), 'region');
  assert.equal(formFieldOfError('order[0]: unknown field "x"'), 'order');
  assert.equal(formFieldOfError('the server is shutting down; retry'), undefined);
});
