/** Shared steps of the instances tests (not a test file itself). */
import assert from 'node:assert/strict';
import type { TestApp } from './helpers/harness.js';
import { OFFER_ID_STRIDE } from '../src/machines/machines-offers-contract.js';

/** A simulated machine with known prices: `{machine_id, offer_ids}`; offer_ids[k-1] rents k GPUs when listed. */
export async function addMachine(app: TestApp, body: Record<string, unknown> = {}): Promise<{ machine_id: number; offer_ids: number[] }> {
  const res = await app.request('POST', '/_emu/machines', {
    body: { num_gpus: 2, price_gpu: 0.5, price_disk: 0.1, min_bid: 0.2, disk_space: 500, direct_port_count: 100, vms_enabled: true, ...body },
  });
  assert.equal(res.status, 200, res.raw);
  return res.body;
}

/** The offer renting all `n` GPUs of the machine. */
export function offerFor(m: { offer_ids: number[] }, n: number): number {
  const id = m.offer_ids.find((o) => o % OFFER_ID_STRIDE === n);
  assert.ok(id, `no ${n}-GPU offer in ${JSON.stringify(m.offer_ids)}`);
  return id;
}

export async function rent(app: TestApp, offerId: number, body: Record<string, unknown> = {}, key?: string, headers?: Record<string, string>) {
  return app.request('PUT', `/api/v0/asks/${offerId}/`, { key, body: { image: 'pytorch/pytorch:latest', ...body }, headers });
}

export async function rentOk(app: TestApp, offerId: number, body: Record<string, unknown> = {}, key?: string): Promise<{ id: number; instanceKey: string }> {
  const res = await rent(app, offerId, body, key);
  assert.equal(res.status, 200, res.raw);
  return { id: res.body.new_contract, instanceKey: res.body.instance_api_key };
}

export async function show(app: TestApp, id: number, key?: string) {
  return app.request('GET', `/api/v0/instances/${id}/`, { key });
}

export async function statusOf(app: TestApp, id: number, key?: string): Promise<any> {
  const res = await show(app, id, key);
  assert.equal(res.status, 200, res.raw);
  return res.body.instances;
}

/** The configured maximum boot time plus provisioning: after this every boot has finished. */
export const BOOT_MAX_S = 21;

/**
 * Resolves once `n` event streams or waits of the app are parked until the next change: each has read where it starts
 * from, so a change made now reaches it. (The signal to wait on instead of sleeping.)
 */
export async function parked(app: TestApp, n = 1): Promise<void> {
  const hub = app.services.instances.hub;
  while (hub.waiting < n) await new Promise((r) => setImmediate(r));
}

/** Advances second by second until the instance is running; returns the second it became so. */
export async function untilRunning(app: TestApp, id: number, key: string): Promise<number> {
  for (let i = 0; i < 120; i++) {
    if ((await statusOf(app, id, key)).actual_status === 'running') {
      // The boot finished at a fraction of a second between two steps: the ledger charges from its whole second.
      const row = await app.store.db.selectFrom('instances').select('running_since').where('id', '=', id).executeTakeFirstOrThrow();
      return Math.floor(Number(row.running_since));
    }
    await app.advance(1);
  }
  throw new Error(`instance ${id} never ran`);
}
