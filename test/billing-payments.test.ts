// Credit transfers and invoices (client-compat-more §b): `vastai transfer credit`, `show invoices`, `search invoices`.
// A transfer is atomic on the ledger (both sides and both payment rows, or nothing), never takes a balance below zero
// (running charges included), and concurrent transfers neither lose nor double-count credit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { addMachine, offerFor, rentOk, statusOf } from './instances-fixtures.js';

const micro = (dollars: number) => Math.round(dollars * 1e6);

forEachDialect('credit transfers and invoices', (app) => {
  const credit = async (key: string) => micro((await app().request('GET', '/api/v0/users/current', { key })).body.credit);

  test('transfer by e-mail and by id moves exactly the amount; payment rows on both sides', async () => {
    const a = await app().createUser({ credit: 50 });
    const b = await app().createUser({ credit: 0 });
    const r = await app().request('PUT', '/api/v0/commands/transfer_credit/', { key: a.api_key, body: { sender: 'me', recipient: b.user.email.toUpperCase(), amount: 12.5 } });
    assert.equal(r.status, 200, r.raw);
    assert.equal(r.body.success, true);
    assert.equal(await credit(a.api_key), micro(37.5));
    assert.equal(await credit(b.api_key), micro(12.5));
    const byId = await app().request('PUT', '/api/v0/commands/transfer_credit/', { key: b.api_key, body: { sender: 'me', recipient: String(a.user.id), amount: 2.25 } });
    assert.equal(byId.status, 200, byId.raw);
    assert.equal(await credit(a.api_key), micro(39.75));
    assert.equal(await credit(b.api_key), micro(10.25));

    const inv = await app().request('GET', '/api/v0/users/me/invoices', { key: b.api_key, query: { owner: 'me', sdate: '0', edate: String(app().clock.now() + 1), inc_charges: 'true' } });
    assert.equal(inv.status, 200, inv.raw);
    const pays = inv.body.invoices.filter((x: any) => x.type === 'payment');
    assert.deepEqual(pays.map((p: any) => p.amount), [12.5, -2.25]);
    assert.ok(pays.every((p: any) => typeof p.timestamp === 'number' && 'instance_id' in p));
    assert.equal(inv.body.current.credit, 10.25);
  });

  test('refused: more than the balance (402), unknown recipient (404), yourself, non-positive amounts, another sender', async () => {
    const a = await app().createUser({ credit: 5 });
    const b = await app().createUser({ credit: 0 });
    const send = (body: Record<string, unknown>) => app().request('PUT', '/api/v0/commands/transfer_credit/', { key: a.api_key, body });
    const over = await send({ sender: 'me', recipient: b.user.email, amount: 5.01 });
    assert.equal(over.status, 402);
    assert.equal(over.body.error, 'insufficient_credit');
    const nobody = await send({ sender: 'me', recipient: 'nobody@example.com', amount: 1 });
    assert.equal(nobody.status, 404);
    assert.equal(nobody.body.error, 'not_found');
    assert.equal((await send({ sender: 'me', recipient: a.user.email, amount: 1 })).status, 400);
    for (const amount of [0, -1, 'ten', null]) assert.equal((await send({ sender: 'me', recipient: b.user.email, amount })).status, 400, String(amount));
    const other = await send({ sender: b.user.id, recipient: b.user.email, amount: 1 });
    assert.equal(other.status, 403);
    assert.equal(await credit(a.api_key), micro(5));
    assert.equal(await credit(b.api_key), 0);
  });

  test('the running charges count: a balance spent by a running instance cannot be sent away', async () => {
    const a = await app().createUser({ credit: 1 });
    const b = await app().createUser({ credit: 0 });
    const m = await addMachine(app(), { num_gpus: 1, price_gpu: 3.6, price_disk: 0 });
    const { id } = await rentOk(app(), offerFor(m, 1), { disk: 10 }, a.api_key);
    for (let i = 0; i < 20 && (await statusOf(app(), id, a.api_key)).actual_status !== 'running'; i++) await app().advance(5);
    await app().advance(500); // $3.60/h for 500 s: about $0.50 accrued, not yet settled
    const left = await credit(a.api_key);
    assert.ok(left < micro(0.6), String(left));
    const r = await app().request('PUT', '/api/v0/commands/transfer_credit/', { key: a.api_key, body: { sender: 'me', recipient: b.user.email, amount: 0.9 } });
    assert.equal(r.status, 402, r.raw);
  });

  test('concurrent transfers both ways never lose or create credit, and never go below zero', async () => {
    const a = await app().createUser({ credit: 10 });
    const b = await app().createUser({ credit: 10 });
    const send = (from: typeof a, to: typeof a) =>
      app().request('PUT', '/api/v0/commands/transfer_credit/', { key: from.api_key, body: { sender: 'me', recipient: to.user.email, amount: 3 } });
    const results = await Promise.all([send(a, b), send(b, a), send(a, b), send(b, a), send(a, b), send(a, b), send(a, b)]);
    assert.ok(results.every((r) => r.status === 200 || r.status === 402), results.map((r) => r.status).join(','));
    const ca = await credit(a.api_key);
    const cb = await credit(b.api_key);
    assert.equal(ca + cb, micro(20));
    assert.ok(ca >= 0 && cb >= 0);
    const rows = await app().store.db.selectFrom('billing_payments').selectAll().where('user_id', 'in', [a.user.id, b.user.id]).where('kind', '!=', 'credit').execute();
    assert.equal(rows.length, 2 * results.filter((r) => r.status === 200).length);
    assert.equal(rows.reduce((s, r) => s + Number(r.amount_micro), 0), 0);
  });

  test('invoices list the ledger\'s charges in the range (or only payments with inc_charges=false); search filters records', async () => {
    const u = await app().createUser({ credit: 100 });
    const m = await addMachine(app(), { num_gpus: 1, price_gpu: 3.6, price_disk: 0 });
    const { id } = await rentOk(app(), offerFor(m, 1), { disk: 10 }, u.api_key);
    for (let i = 0; i < 20 && (await statusOf(app(), id, u.api_key)).actual_status !== 'running'; i++) await app().advance(5);
    await app().advance(3600);
    assert.equal((await app().request('PUT', `/api/v0/instances/${id}/`, { key: u.api_key, body: { state: 'stopped' } })).status, 200);
    const now = app().clock.now();
    const q = { owner: 'me', sdate: String(now - 86_400), edate: String(now + 1) };
    const inv = await app().request('GET', '/api/v0/users/me/invoices', { key: u.api_key, query: { ...q, inc_charges: 'true' } });
    assert.equal(inv.status, 200, inv.raw);
    const charges = inv.body.invoices.filter((x: any) => x.type === 'charge');
    assert.ok(charges.length >= 1);
    assert.ok(charges.every((c: any) => c.instance_id === id && typeof c.amount === 'number' && typeof c.timestamp === 'number'));
    const gpu = charges.filter((c: any) => c.description.endsWith('(gpu)')).reduce((s: number, c: any) => s + micro(c.amount), 0);
    assert.ok(gpu >= micro(3.6) && gpu < micro(3.7), String(gpu)); // an hour at $3.60, plus the seconds before the stop
    const onlyPayments = await app().request('GET', '/api/v0/users/me/invoices', { key: u.api_key, query: { ...q, inc_charges: 'false' } });
    assert.ok(onlyPayments.body.invoices.every((x: any) => x.type === 'payment'));
    // Bounds with fractions of a second (a real clock's default range is `now` minus a day): the same charges. On
    // PostgreSQL the charge times are whole seconds (bigint), and a fraction compared with them was a 500.
    const fractional = await app().request('GET', '/api/v0/users/me/invoices', { key: u.api_key, query: { owner: 'me', sdate: String(now - 86_400 + 0.25), edate: String(now + 0.75), inc_charges: 'true' } });
    assert.equal(fractional.status, 200, fractional.raw);
    assert.deepEqual(fractional.body.invoices.filter((x: any) => x.type === 'charge'), charges);
    const outside = await app().request('GET', '/api/v0/users/me/invoices', { key: u.api_key, query: { owner: 'me', sdate: '0', edate: '1' } });
    assert.deepEqual(outside.body.invoices, []);

    const other = await app().createUser({ credit: 0 });
    await app().request('PUT', '/api/v0/commands/transfer_credit/', { key: u.api_key, body: { sender: 'me', recipient: other.user.email, amount: 1 } });
    const all = await app().request('GET', '/api/v0/invoices', { key: u.api_key, query: { select_cols: '["*"]', select_filters: '{}' } });
    assert.equal(all.status, 200, all.raw);
    assert.ok(Array.isArray(all.body));
    assert.deepEqual(all.body.map((r: any) => r.amount_cents), [10_000, -100]);
    const credits = await app().request('GET', '/api/v0/invoices', { key: u.api_key, query: { select_filters: JSON.stringify({ is_credit: { eq: 'true' } }) } });
    assert.deepEqual(credits.body.map((r: any) => r.amount_cents), [10_000]);
    const bad = await app().request('GET', '/api/v0/invoices', { key: u.api_key, query: { select_filters: JSON.stringify({ nope: { eq: 1 } }) } });
    assert.equal(bad.status, 400);
    assert.match(bad.body.msg, /unknown field "nope"/);
  });
});
