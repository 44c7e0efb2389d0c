// The offer query language of `gpuplane search offers` (vastai's, client side): filters, aliases, units, errors.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_OFFER_QUERY, numericVersion, parseOfferQuery, parseOrder, QueryError } from '../src/cli/offer-query.js';
import { driverCode } from '../src/machines/machines-offers-contract.js';
import { coerce } from '../src/offers/filter.js';
import { EXIT } from '../src/cli/context.js';
import { OWNER_KEY, useServer } from './cli-helpers.js';
import { createClient } from '../src/sdk/client.js';

test('the issue example: names with _, >=, >, in [list]', () => {
  assert.deepEqual(parseOfferQuery('gpu_name=RTX_4090 num_gpus>=2 reliability>0.99 geolocation in [US,CA]'), {
    gpu_name: { eq: 'RTX 4090' },
    num_gpus: { gte: 2 },
    reliability: { gt: 0.99 },
    geolocation: { in: ['US', 'CA'] },
  });
});

test('every operator, symbolic and word forms, with spaces around them', () => {
  assert.deepEqual(
    parseOfferQuery('num_gpus = 1 cpu_cores==4 disk_space != 10 dph_total < 1.5 inet_up <= 100 inet_down > 5 pcie_bw >= 3 geolocation notin [CN, VN]'),
    {
      num_gpus: { eq: 1 },
      cpu_cores: { eq: 4 },
      disk_space: { neq: 10 },
      dph_total: { lt: 1.5 },
      inet_up: { lte: 100 },
      inet_down: { gt: 5 },
      pcie_bw: { gte: 3 },
      geolocation: { notin: ['CN', 'VN'] },
    },
  );
  assert.deepEqual(parseOfferQuery('geolocation not in [CN] num_gpus gte 2 gpu_name nin [A100]'), {
    geolocation: { notin: ['CN'] },
    num_gpus: { gte: 2 },
    gpu_name: { notin: ['A100'] },
  });
});

test('units as the vastai client converts them: RAM in GB sent in MB, duration in days sent in seconds', () => {
  assert.deepEqual(parseOfferQuery('gpu_ram>=23 cpu_ram>64 gpu_total_ram>=0.1 duration>=2.5'), {
    gpu_ram: { gte: 23000 },
    cpu_ram: { gt: 64000 },
    gpu_total_ram: { gte: 100 },
    duration: { gte: 216000 },
  });
});

test('driver_version 535.86.05 is sent as 535086005; an integer is kept', () => {
  assert.equal(numericVersion('535.86.05'), 535086005);
  assert.equal(numericVersion('550.54'), 550054000);
  assert.deepEqual(parseOfferQuery('driver_version>=535.86.05'), { driver_version: { gte: 535086005 } });
  assert.deepEqual(parseOfferQuery('driver_version>=535086005'), { driver_version: { gte: 535086005 } });
});

test('driver versions: one encoding for machines, the server\'s filters and the CLI', () => {
  const machine = driverCode;
  const server = (v: unknown) => coerce({ type: 'version', get: () => null }, v, 'driver_version');
  for (const [text, code] of [['535.86.05', 535086005], ['550.54', 550054000], ['1.2.3', 1002003], [' 470.1.2 ', 470001002]] as const) {
    assert.equal(machine(text), code, text);
    assert.equal(server(text), code, text);
    assert.equal(numericVersion(text), code, text);
  }
  for (const bad of ['5.x', '1.2.3.4', '1000.1.1', '535..1', '']) {
    assert.ok(Number.isNaN(machine(bad)), bad);
    assert.throws(() => server(bad), /driver_version/, bad);
    assert.throws(() => numericVersion(bad), QueryError, bad);
  }
  // Bare digits are not a dotted version; a filter takes them as a code already encoded (as the CLI sends them).
  assert.ok(Number.isNaN(machine('535')));
  assert.equal(server('535086005'), 535086005);
});

test('aliases: cuda_vers, dph, dlperf_usd, flops_usd, display_active', () => {
  assert.deepEqual(parseOfferQuery('cuda_vers>=12.1 dph<2 dlperf_usd>10 flops_usd>1 display_active=false'), {
    cuda_max_good: { gte: 12.1 },
    dph_total: { lt: 2 },
    dlperf_per_dphtotal: { gt: 10 },
    flops_per_dphtotal: { gt: 1 },
    gpu_display_active: { eq: false },
  });
});

test('quoted names keep their spaces and underscores; booleans in any case', () => {
  assert.deepEqual(parseOfferQuery('gpu_name in ["RTX 4090", "RTX_3090"] verified=False rentable=TRUE'), {
    gpu_name: { in: ['RTX 4090', 'RTX_3090'] },
    verified: { eq: false },
    rentable: { eq: true },
  });
});

test('over the defaults: a comparison replaces the default, =any removes it', () => {
  const q = parseOfferQuery('verified=false rented=any num_gpus>=2', DEFAULT_OFFER_QUERY());
  assert.deepEqual(q, { verified: { eq: false }, external: { eq: false }, rentable: { eq: true }, num_gpus: { gte: 2 } });
  assert.deepEqual(DEFAULT_OFFER_QUERY().rented, { eq: false }, 'the defaults are not mutated');
});

test('several operators on one field are all kept', () => {
  assert.deepEqual(parseOfferQuery('reliability>0.9 reliability<0.99'), { reliability: { gt: 0.9, lt: 0.99 } });
});

for (const [query, why] of [
  ['gpu_nam=RTX_4090', /unknown field "gpu_nam"/],
  ['num_gpus=>2', /unknown operator "=>"/],
  ['num_gpus 2', /expected an operator/],
  ['num_gpus>=', /missing value/],
  ['num_gpus>=two', /num_gpus: "two" is not an integer/],
  ['num_gpus>=2.5', /not an integer/],
  ['reliability>high', /not a number/],
  ['verified=yes', /true or false/],
  ['gpu_name>RTX_4090', /text field/],
  ['verified>true', /yes\/no field/],
  ['geolocation in [US', /unclosed \[/],
  ['geolocation in []', /list is empty/],
  ['num_gpus=[1,2]', /needs in or notin/],
  ['num_gpus>any', /only makes sense with =/],
  ['driver_version>=5.x', /not a version/],
  ['>3', /expected a field name/],
] as const) {
  test(`malformed query is an error: ${query}`, () => {
    assert.throws(() => parseOfferQuery(query), (err: unknown) => err instanceof QueryError && why.test(err.message));
  });
}

test('order: a trailing - sorts descending, + or nothing ascending; aliases resolve; unknown fields fail', () => {
  assert.deepEqual(parseOrder('dph_total,score-'), [['dph_total', 'asc'], ['score', 'desc']]);
  assert.deepEqual(parseOrder('dph+, num_gpus-'), [['dph_total', 'asc'], ['num_gpus', 'desc']]);
  assert.throws(() => parseOrder('price-'), /unknown field "price"/);
  assert.throws(() => parseOrder('score--'), QueryError);
});

test('countries and regions (issue 29 item 4): codes as written, a region name with its spaces (the server expands it)', () => {
  assert.deepEqual(parseOfferQuery('geolocation=US'), { geolocation: { eq: 'US' } });
  assert.deepEqual(parseOfferQuery('geolocation in [North_America, de] geolocation!=Europe'), {
    geolocation: { in: ['North America', 'de'], neq: 'Europe' },
  });
});

test('a comparison no value of the field passes is refused before sending, in the query\'s words (issue 29 item 5)', () => {
  for (const [query, why] of [
    ['reliability>99', /^reliability gt 99: cannot match: reliability is a fraction from 0 to 1 \(0\.99 is 99 %\)/],
    ['reliability>=1.5', /reliability gte 1\.5: cannot match/],
    ['reliability in [0.9,95]', /reliability in 95: cannot match/],
    ['num_gpus=0', /num_gpus eq 0: cannot match: num_gpus is a number of GPUs, at least 1/],
    ['gpu_ram<0', /gpu_ram lt 0: cannot match: gpu_ram is never negative/],
  ] as const) {
    assert.throws(() => parseOfferQuery(query), (err: unknown) => err instanceof QueryError && why.test(err.message), query);
  }
  assert.deepEqual(parseOfferQuery('reliability>=0.99 reliability<=1 num_gpus>=0'), { reliability: { gte: 0.99, lte: 1 }, num_gpus: { gte: 0 } });
});

describe('search offers against a server: countries, regions and refusals', () => {
  const server = useServer();

  test('geolocation=US, geolocation in [US,CA] (the --help example) and a region find the offers of those countries', async () => {
    const country = (o: { geolocation: string }) => o.geolocation.slice(-2);
    for (const [query, want] of [
      ['geolocation=US', ['US']],
      ['geolocation in [US,CA]', ['US', 'CA']],
      ['geolocation=North_America', ['US', 'CA']],
    ] as const) {
      const r = await server.cli(['search', 'offers', query, '-n', '--limit', '1000', '--raw']);
      assert.equal(r.code, 0, r.stderr);
      const offers = JSON.parse(r.stdout) as { geolocation: string }[];
      assert.ok(offers.length > 0, `${query} finds offers`);
      assert.deepEqual([...new Set(offers.map(country))].filter((c) => !want.includes(c as never)), [], query);
    }
  });

  test('launch instance -r takes a region name: the offer in its countries is rented', async () => {
    const sdk = createClient({ url: server.url(), apiKey: OWNER_KEY });
    const { api_key } = await sdk.emulator.createUser({ email: `cli-query-${process.pid}@example.com`, credit: 100 });
    const far = await sdk.emulator.addMachine({ gpu_name: 'Tesla T4', num_gpus: 1, price_gpu: 0.01, geolocation: 'Texas, US' });
    const near = await sdk.emulator.addMachine({ gpu_name: 'Tesla T4', num_gpus: 1, price_gpu: 5, geolocation: 'Perth, AU' });
    const r = await server.cli(['launch', 'instance', '-g', 'Tesla_T4', '-n', '1', '-i', 'alpine', '-r', 'Oceania', '-o', 'dph_total'], { GPUPLANE_API_KEY: api_key });
    assert.equal(r.code, 0, r.stderr);
    const offer = Number(/from offer (\d+)$/m.exec(r.stdout)?.[1]);
    assert.ok(near.offer_ids.includes(offer), `${offer} is the machine in Australia, not the cheaper one in ${far.offer_ids.includes(offer) ? 'Texas' : '?'}`);
  });

  test('an unknown GPU model: the server\'s refusal is printed as it is, with its status, and the exit code says so', async () => {
    const r = await server.cli(['search', 'offers', 'gpu_name=RTX4090']);
    assert.equal(r.code, EXIT.error);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /^gpuplane: gpu_name\.eq: "RTX4090" cannot match: did you mean "RTX 4090"\? .* \(HTTP 400, bad_request\)\n$/);
    const range = await server.cli(['search', 'offers', 'reliability>99']);
    assert.equal(range.code, EXIT.usage);
    assert.match(range.stderr, /^gpuplane: reliability gt 99: cannot match: reliability is a fraction from 0 to 1/);
  });
});
