/** Shared steps of the prepaid-instance tests (not a test file itself). */
import assert from 'node:assert/strict';
import type { TestApp } from './helpers/harness.js';

export const micro = (dollars: number) => Math.round(dollars * 1e6);
export const disc = (rate: number, ppm: number) => Math.floor((rate * (1e6 - ppm)) / 1e6);

export async function balance(app: TestApp, key: string): Promise<number> {
  const me = await app.request('GET', '/api/v0/users/current', { key });
  assert.equal(me.status, 200, me.raw);
  return micro(me.body.credit);
}

export async function instanceCharges(app: TestApp, key: string, id: number): Promise<Record<string, number>> {
  const day = { gte: 0, lte: Math.floor(app.clock.now()) + 86_400 };
  const res = await app.request('GET', '/api/v0/charges/', { key, query: { select_filters: JSON.stringify({ day }) } });
  assert.equal(res.status, 200, res.raw);
  const entry = res.body.results.find((r: any) => r.source === `instance-${id}`);
  return Object.fromEntries(entry.items.map((i: any) => [i.type, micro(i.amount)]));
}

export const prepay = (app: TestApp, id: number, amount: unknown, key: string) =>
  app.request('PUT', `/api/v0/instances/prepay/${id}/`, { key, body: { amount } });
export const deposit = (app: TestApp, id: number, key: string) =>
  app.request('GET', `/api/v0/instances/balance/${id}/`, { key, query: { owner: 'me' } });

