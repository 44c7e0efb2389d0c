// Offer search filters that could never match (issue 29 items 4 and 5): a country code or a region name in
// `geolocation` matches the country of "California, US" as on Vast.ai (the vastai client: "Two letter country code.
// Works with operators =, !=, in, notin"); an unknown GPU model or a value outside a field's range is a 400 naming
// the field and the expected form, never a silent empty list.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { GEO_REGIONS } from '../src/offers/offer-geo.js';

interface Offer {
  id: number;
  geolocation: string;
  gpu_name: string;
  reliability: number;
}

const search = (app: TestApp, body: unknown) => app.request('POST', '/api/v0/bundles/', { body });
const ids = (offers: { id: number }[]) => offers.map((o) => o.id).sort((a, b) => a - b);
const country = (o: Offer) => /, ([A-Z]{2})$/.exec(o.geolocation)?.[1];

async function addMachine(app: TestApp, body: Record<string, unknown>): Promise<{ machine_id: number; offer_ids: number[] }> {
  const res = await app.request('POST', '/_emu/machines', { body });
  assert.equal(res.status, 200, res.raw);
  return res.body;
}

forEachDialect('offer search: country codes and regions in geolocation', (app) => {
  const everything = async (): Promise<Offer[]> => (await search(app(), { limit: 1000 })).body.offers;
  const found = async (geolocation: unknown, extra: object = {}) => {
    const res = await search(app(), { geolocation, limit: 1000, ...extra });
    assert.equal(res.status, 200, res.raw);
    return ids(res.body.offers);
  };

  test('a two-letter code matches the country of the place, with eq, neq, in and notin, in any case', async () => {
    const all = await everything();
    const of = (pred: (o: Offer) => boolean) => ids(all.filter(pred));
    assert.ok(of((o) => country(o) === 'US').length > 0, 'the seeded fleet has machines in the US');
    assert.ok(of((o) => country(o) === 'CA').length > 0, 'and in Canada');
    assert.deepEqual(await found({ eq: 'US' }), of((o) => country(o) === 'US'));
    assert.deepEqual(await found({ eq: 'us' }), of((o) => country(o) === 'US'));
    assert.deepEqual(await found({ neq: 'US' }), of((o) => country(o) !== 'US'));
    assert.deepEqual(await found({ in: ['US', 'CA'] }), of((o) => country(o) === 'US' || country(o) === 'CA'));
    assert.deepEqual(await found({ notin: ['US', 'ca'] }), of((o) => country(o) !== 'US' && country(o) !== 'CA'));
    // The new-style search (`search offers --new`) is the same search.
    const asks = await app().request('PUT', '/api/v0/search/asks/', { body: { select_cols: ['*'], q: { geolocation: { in: ['US', 'CA'] }, limit: 1000 } } });
    assert.equal(asks.status, 200, asks.raw);
    assert.deepEqual(ids(asks.body.offers), of((o) => country(o) === 'US' || country(o) === 'CA'));
  });

  test('a whole geolocation still matches as itself, alone or beside codes in a list', async () => {
    const a = await addMachine(app(), { geolocation: 'Reykjavik, IS', num_gpus: 1 });
    const b = await addMachine(app(), { geolocation: 'Akureyri, IS', num_gpus: 1 });
    assert.deepEqual(await found({ eq: 'Reykjavik, IS' }), a.offer_ids);
    assert.deepEqual(await found({ eq: 'IS' }), ids([...a.offer_ids, ...b.offer_ids].map((id) => ({ id }))));
    assert.deepEqual(await found({ in: ['Akureyri, IS', 'ZZ'] }), b.offer_ids);
    assert.deepEqual(await found({ neq: 'Reykjavik, IS' }, { geolocation: undefined, machine_id: { in: [a.machine_id, b.machine_id] } }), ids([...a.offer_ids, ...b.offer_ids].map((id) => ({ id }))));
    const notReykjavik = (await search(app(), { geolocation: { eq: 'IS', neq: 'Reykjavik, IS' }, limit: 1000 })).body.offers;
    assert.deepEqual(ids(notReykjavik), b.offer_ids);
  });

  test('a region name the vastai client knows expands to its countries, written as the clients send it', async () => {
    const all = await everything();
    const inRegion = (name: string) => ids(all.filter((o) => GEO_REGIONS[name].includes(country(o) ?? '')));
    assert.ok(inRegion('Europe').length > 0 && inRegion('North_America').length > 0);
    assert.deepEqual(await found({ eq: 'Europe' }), inRegion('Europe'));
    // vast.py and the gpuplane CLI turn `_` into a space; the console may send any case.
    assert.deepEqual(await found({ eq: 'North America' }), inRegion('North_America'));
    assert.deepEqual(await found({ in: ['north_america'] }), inRegion('North_America'));
    assert.deepEqual(await found({ in: ['Europe', 'JP'] }), ids(all.filter((o) => GEO_REGIONS.Europe.includes(country(o) ?? '') || country(o) === 'JP')));
    assert.deepEqual(await found({ neq: 'Europe' }), ids(all.filter((o) => !GEO_REGIONS.Europe.includes(country(o) ?? ''))));
    assert.deepEqual(await found({ notin: ['Asia', 'Oceania'] }), ids(all.filter((o) => ![...GEO_REGIONS.Asia, ...GEO_REGIONS.Oceania].includes(country(o) ?? ''))));
    // What `vastai launch instance -r North_America` sends: the region's own list of codes, with spaces.
    assert.deepEqual(await found({ in: GEO_REGIONS.North_America.map((c) => ` ${c}`) }), inRegion('North_America'));
    const ordered = await search(app(), { geolocation: { gt: 'Europe' } });
    assert.equal(ordered.status, 400);
    assert.match(ordered.body.msg, /^geolocation\.gt: "Europe" names several values: compare it with eq, neq, in or notin/);
  });
});

forEachDialect('offer search: values that cannot match are refused', (app) => {
  const refused = async (body: unknown, msg: RegExp) => {
    const res = await search(app(), body);
    assert.equal(res.status, 400, `${JSON.stringify(body)} -> ${res.raw}`);
    assert.equal(res.body.success, false);
    assert.equal(res.body.error, 'bad_request');
    assert.match(res.body.msg, msg);
  };

  test('an unknown GPU model is a 400 naming the field, suggesting the model meant and listing the known ones', async () => {
    await refused({ gpu_name: { eq: 'RTX4090' } }, /^gpu_name\.eq: "RTX4090" cannot match: did you mean "RTX 4090"\? gpu_name is a GPU model .*one of: .*H100 SXM.*RTX 4090/);
    await refused({ gpu_name: { in: ['RTX 4090', 'RTX 4O90'] } }, /^gpu_name\.in\[1\]: "RTX 4O90" cannot match: gpu_name is a GPU model/);
    await refused({ gpu_name: { neq: 'Voodoo 5' } }, /^gpu_name\.neq: "Voodoo 5"/);
    await refused({ gpu_name: { notin: ['A1OO'] } }, /^gpu_name\.notin\[0\]/);
    // Through every search route: the new style and the older GET.
    const asks = await app().request('PUT', '/api/v0/search/asks/', { body: { q: { gpu_name: { eq: 'RTX4090' } } } });
    assert.equal(asks.status, 400);
    const old = await app().request('GET', `/api/v0/bundles?q=${encodeURIComponent(JSON.stringify({ gpu_name: { eq: 'RTX4090' } }))}`);
    assert.equal(old.status, 400);
  });

  test('known models are the catalogue\'s and the fleet\'s: a model no machine has yet is an empty list, a host\'s own model is found', async () => {
    const ok = async (body: unknown) => {
      const res = await search(app(), body);
      assert.equal(res.status, 200, res.raw);
      return ids(res.body.offers);
    };
    assert.deepEqual(await ok({ gpu_name: { eq: 'RTX_4090' }, num_gpus: { gte: 1 } }).then((x) => x.length > 0), true);
    // Every catalogue model is accepted, in the CLI's spelling too, whether or not the fleet has one.
    for (const name of ['RTX 3060', 'rtx_5090', 'H200', 'Tesla T4']) await ok({ gpu_name: { eq: name } });
    await refused({ gpu_name: { eq: 'Quantum 9000' } }, /gpu_name\.eq/);
    const m = await addMachine(app(), { gpu_name: 'Quantum 9000', num_gpus: 1 });
    assert.deepEqual(await ok({ gpu_name: { eq: 'Quantum_9000' } }), m.offer_ids);
  });

  test('a comparison outside a field\'s range is a 400 saying the range; a bound every value passes is kept', async () => {
    await refused({ reliability: { gt: 99 } }, /^reliability\.gt: 99 cannot match: reliability is a fraction from 0 to 1/);
    await refused({ reliability2: { gte: '99.5' } }, /^reliability2\.gte: "99\.5" cannot match: reliability2 is a fraction from 0 to 1/);
    await refused({ reliability: { gt: 1 } }, /reliability\.gt/);
    await refused({ reliability: { eq: 95 } }, /reliability\.eq/);
    await refused({ reliability: { in: [0.9, 99] } }, /^reliability\.in\[1\]: 99 cannot match/);
    await refused({ reliability: { lt: 0 } }, /reliability\.lt/);
    await refused({ num_gpus: { eq: 0 } }, /^num_gpus\.eq: 0 cannot match: num_gpus is a number of GPUs, at least 1/);
    await refused({ dph_total: { lt: -1 } }, /^dph_total\.lt: -1 cannot match: dph_total is never negative/);
    for (const body of [{ reliability: { gte: 0 } }, { reliability: { lte: 1 } }, { reliability: { lt: 5 } }, { reliability: { gt: 0.99 } }, { num_gpus: { gte: 0 } }]) {
      assert.equal((await search(app(), body)).status, 200, JSON.stringify(body));
    }
  });
});
