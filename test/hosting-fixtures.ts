/** Shared steps of the hosting tests (not a test file itself). */
import assert from 'node:assert/strict';
import type { TestApp } from './helpers/harness.js';

/** A machine of `userId` (a host is a user), through the emulator; `listed: false` as after registration. */
export async function hostMachine(app: TestApp, userId: number, body: Record<string, unknown> = {}): Promise<{ machine_id: number; offer_ids: number[] }> {
  const res = await app.request('POST', '/_emu/machines', {
    body: { num_gpus: 2, price_gpu: 0.5, price_disk: 0.1, min_bid: 0.2, disk_space: 500, owner_user_id: userId, ...body },
  });
  assert.equal(res.status, 200, res.raw);
  return res.body;
}

/** A user who hosts: `{id, key}`. */
export async function newHost(app: TestApp, credit = 10): Promise<{ id: number; key: string }> {
  const { user, api_key } = await app.createUser({ credit });
  return { id: user.id, key: api_key };
}

/** The `POST /bundles/` search of `vastai self-test machine`: the machine id as a string, "any" as wildcards. */
export async function selfTestSearch(app: TestApp, machineId: number, key: string, rentable: boolean | 'any' = true) {
  const res = await app.request('POST', '/api/v0/bundles/', {
    key,
    body: { machine_id: { eq: String(machineId) }, verified: { eq: 'any' }, rentable: { eq: rentable }, rented: { eq: 'any' }, order: [['score', 'desc']], type: 'on-demand', limit: 100 },
  });
  assert.equal(res.status, 200, res.raw);
  return res.body.offers as any[];
}

export const listBody = (machine: number, over: Record<string, unknown> = {}) => ({
  machine, price_gpu: null, price_disk: null, price_inetu: null, price_inetd: null, price_min_bid: null, min_chunk: 1,
  end_date: null, credit_discount_max: null, duration: null, vol_size: null, vol_price: null, ...over,
});
