// The search reply writer (src/offers/offer-json.ts) keeps each served offer's JSON as fragments: its text must be
// exactly JSON.stringify of offerJson, whatever the cache holds, and the cache must stay bounded however many offers
// are served (a long-running server serves ever more of them; issue 16's soak).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { offerJson, type OfferContext, type OfferEntry } from '../src/machines/machines-offers-contract.js';
import { FRAGMENT_GENERATION, offerJsonWriter } from '../src/offers/offer-json.js';

const reference = (rows: readonly OfferEntry[], ctx: OfferContext) => JSON.stringify({ offers: rows.map((o) => offerJson(o, ctx)) });

forEachDialect('offer reply writer', (app) => {
  test('the reply text is the reference’s, byte for byte, while the cache stays within two generations', async () => {
    const fleet = await app().services.fleet.index.offers();
    assert.ok(fleet.length > 0);
    // More distinct offer objects than the cache holds: copies of the fleet's offers, each its own id (as a reload
    // of a machine makes new objects for its offers).
    const total = FRAGMENT_GENERATION * 3 + 17;
    const offers = Array.from({ length: total }, (_, i) => ({ ...fleet[i % fleet.length], id: 1_000_000 + i }));
    const writer = offerJsonWriter();
    const ctx: OfferContext = { type: 'ondemand', storage_gb: 10, now: app().clock.now() };
    for (let start = 0; start < total; start += 64) {
      const page = offers.slice(start, start + 64);
      assert.ok(writer.offersReplyText(page, ctx) === reference(page, ctx), `page at ${start} differs`);
      assert.ok(writer.cachedOffers() <= 2 * FRAGMENT_GENERATION, `${writer.cachedOffers()} offers cached`);
    }
    // Served again after thousands of others (so from the old generation, or built afresh), and with another
    // context (the fields that depend on the search are not part of the fragments): still the reference's text.
    const again = [offers[0], offers[FRAGMENT_GENERATION * 2 + 5], offers[total - 1]];
    for (const c of [ctx, { type: 'bid', storage_gb: 250, now: ctx.now + 3600 } as OfferContext]) {
      assert.ok(writer.offersReplyText(again, c) === reference(again, c));
    }
    assert.ok(writer.offersReplyText([], ctx) === reference([], ctx));
  });

  test('the prices written into an offer’s kept text follow the search’s type and storage, and the clock is never kept', async () => {
    const fleet = await app().services.fleet.index.offers();
    const now = app().clock.now();
    // An offer whose listing ends 10 s from now: rentable with a duration now, neither 20 s later.
    const ending = { ...fleet[0], id: 2_000_000, machine: { ...fleet[0].machine, end_date: now + 10 } };
    const page = [ending, fleet[1], fleet[2]];
    const writer = offerJsonWriter();
    const contexts: OfferContext[] = [
      { type: 'ondemand', storage_gb: 10, now },
      { type: 'ondemand', storage_gb: 10, now: now + 20 },
      { type: 'bid', storage_gb: 10, now: now + 20 },
      { type: 'bid', storage_gb: 64, now: now + 21.5 },
      { type: 'ondemand', storage_gb: 10, now: now + 1.25 },
      { type: 'reserved', storage_gb: 10, now },
      { type: 'ondemand', storage_gb: 10, now },
    ];
    for (const c of contexts) {
      const text = writer.offersReplyText(page, c);
      assert.equal(text, reference(page, c), `${JSON.stringify(c)}`);
      const first = JSON.parse(text).offers[0];
      assert.equal(first.rentable, c.now < now + 10);
      assert.equal(first.duration, Math.max(0, now + 10 - c.now));
      assert.equal(first.allocated_storage, c.storage_gb);
      assert.equal(first.is_bid, c.type === 'bid');
    }
  });
});
