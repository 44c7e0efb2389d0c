// The SDK against a real gpuplane server process (virtual clock): typed replies and errors, the Idempotency-Key that
// makes a retried create rent once, and waitForInstance on the server's events: success, failure and timeout.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient, GpuplaneError, InstanceFailedError, WaitTimeoutError } from '../src/sdk/index.js';
import { OWNER_KEY, startServer, T0, type ServerProcess } from './cli-helpers.js';

let srv: ServerProcess;
const owner = () => createClient({ url: srv.url, apiKey: OWNER_KEY });

before(async () => {
  srv = await startServer();
});
after(async () => {
  await srv?.close();
});

async function freeOffer(): Promise<number> {
  const { offers } = await owner().offers.search({ num_gpus: { eq: 1 }, rentable: { eq: true }, rented: { eq: false }, order: [['dph_total', 'asc']], limit: 1 });
  return offers[0].id;
}

describe('SDK against a server', () => {
  test('account, gpu names and the emulator clock', async () => {
    const me = await owner().account.currentUser();
    assert.equal(me.email, 'owner@gpuplane.local');
    assert.equal(me.api_key, OWNER_KEY);
    const { gpu_names } = await createClient({ url: srv.url }).account.gpuNames();
    assert.ok(gpu_names.includes('RTX 4090'), 'no key needed');
    const { now } = await owner().emulator.clock();
    assert.ok(now >= T0);
  });

  test('errors are GpuplaneError with the server status, code and msg', async () => {
    await assert.rejects(createClient({ url: srv.url, apiKey: 'gpk_wrong_0000000000000000' }).account.currentUser(), (err: unknown) => {
      assert.ok(err instanceof GpuplaneError);
      assert.equal(err.status, 401);
      assert.equal(err.error, 'auth_error');
      assert.equal(err.msg, 'invalid or revoked API key');
      return true;
    });
    await assert.rejects(owner().instances.show(424242), { status: 404, error: 'not_found' });
    await assert.rejects(owner().instances.create(999999, { image: 'alpine' }), { status: 404, error: 'not_found' });
  });

  test('the same Idempotency-Key rents once: the retry gets the first reply', async () => {
    const offer = await freeOffer();
    const key = globalThis.crypto.randomUUID();
    const a = await owner().instances.create(offer, { image: 'alpine' }, { idempotencyKey: key });
    const b = await owner().instances.create(offer, { image: 'alpine' }, { idempotencyKey: key });
    assert.equal(b.new_contract, a.new_contract);
    const { instances } = await owner().instances.list();
    assert.equal(instances.filter((i) => i.id === a.new_contract).length, 1);
  });

  test('waitForInstance resolves when running, reporting each state', async () => {
    const id = (await owner().instances.create(await freeOffer(), { image: 'alpine' })).new_contract;
    const states: (string | null)[] = [];
    // The first state is reported once the wait is subscribed to the server's events.
    let subscribed!: () => void;
    const watching = new Promise<void>((resolve) => (subscribed = resolve));
    const waiting = owner().waitForInstance(id, {
      timeout: 30,
      onStatus: (s) => {
        states.push(s);
        subscribed();
      },
    });
    await watching;
    await owner().emulator.advance(60);
    const inst = await waiting;
    assert.equal(inst.actual_status, 'running');
    assert.equal(states.at(-1), 'running');
    assert.ok(states.length >= 2, `saw ${states.join(' → ')}`);
  });

  for (const fault of ['exited', 'unknown', 'offline'] as const) {
    test(`waitForInstance fails on ${fault}`, async () => {
      const id = (await owner().instances.create(await freeOffer(), { image: 'alpine' })).new_contract;
      let subscribed!: () => void;
      const watching = new Promise<void>((resolve) => (subscribed = resolve));
      const waiting = owner().waitForInstance(id, { timeout: 30, onStatus: () => subscribed() });
      await watching;
      // Watched before the fault: its event may reach the stream before the fault's own reply arrives.
      const failed = assert.rejects(waiting, (err: unknown) => err instanceof InstanceFailedError && err.actualStatus === fault);
      await owner().emulator.fault({ fault, instance_id: id });
      await failed;
    });
  }

  test('waitForInstance times out while the clock stands still', async () => {
    const id = (await owner().instances.create(await freeOffer(), { image: 'alpine' })).new_contract;
    await assert.rejects(owner().waitForInstance(id, { timeout: 0.5 }), (err: unknown) => err instanceof WaitTimeoutError && err.instanceId === id);
  });

  test('logs come back as text', async () => {
    const id = (await owner().instances.create(await freeOffer(), { image: 'alpine' })).new_contract;
    const log = await owner().instances.logs(id);
    assert.match(log, new RegExp(`instance ${id} created`));
  });
});
