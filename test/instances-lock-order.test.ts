// Lock order (issue 16): freeing GPUs resumes outbid instances on the machine (instances-lifecycle.ts
// `resumeWaiting`) and an allocation stops those it outbids, while other transactions lock the same instances and the
// same machine: destroys of several instances on one machine, a destroy of a waiting bid, a bid change, a start, new
// rentals on demand and by bid, faults, and on a real host its agent's reports. Run together many times, none may
// fail (no 500: a deadlock that outlived its retries), and the GPU holds must stay consistent. On PostgreSQL the app
// has a database of its own, so the server's deadlock count for it says whether any transaction deadlocked at all (a
// retry hides one from the client, but each costs a second of deadlock_timeout). The order that keeps them apart:
// MachinesApi.lockMachine.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { createTestApp, DIALECTS, PG_URL, type TestApp } from './helpers/harness.js';
import { addMachine, offerFor, rent, rentOk } from './instances-fixtures.js';
import { desired, hardware, hostWithMachine, observed } from './agent-server-fixtures.js';
import { OFFER_ID_STRIDE } from '../src/machines/machines-offers-contract.js';

const ROUNDS = 10;
const GPUS = 5;

async function withAdmin<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** A database of the test's own on the PostgreSQL server: its deadlock count is the app's alone. */
async function privateDatabase(): Promise<{ url: string; deadlocks(): Promise<number>; drop(): Promise<void> }> {
  const name = `gpt_lockorder_${process.pid}_${Date.now().toString(36)}`;
  await withAdmin(PG_URL!, (c) => c.query(`CREATE DATABASE "${name}"`));
  const u = new URL(PG_URL!);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    // Backends report their counts when they exit: wait until the app's connections are gone, then read.
    async deadlocks() {
      return withAdmin(PG_URL!, async (c) => {
        for (let tries = 0; ; tries++) {
          const r = await c.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1', [name]);
          if (r.rows[0].n === 0) break;
          assert.ok(tries < 1000, `${r.rows[0].n} connections to ${name} still open after the app closed`);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        await c.query('SELECT pg_stat_clear_snapshot()');
        const r = await c.query('SELECT deadlocks::int AS n FROM pg_stat_database WHERE datname = $1', [name]);
        return r.rows[0].n as number;
      });
    },
    drop: () => withAdmin(PG_URL!, (c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(() => undefined),
  };
}

/** Every instance on the machine agrees with the fleet's GPU rows; nothing waits while a GPU is free. */
async function assertConsistent(app: TestApp, machineId: number): Promise<void> {
  const db = app.store.db;
  const gpus = await db.selectFrom('fleet_gpus').select(['gpu_index', 'instance_id']).where('machine_id', '=', machineId).execute();
  const insts = await db.selectFrom('instances').selectAll().where('machine_id', '=', machineId).execute();
  const byId = new Map(insts.map((i) => [i.id, i]));
  for (const g of gpus) {
    if (g.instance_id === null) continue;
    const holder = byId.get(g.instance_id);
    assert.ok(holder, `GPU ${g.gpu_index} held by instance ${g.instance_id}, not on the machine`);
    assert.equal(holder.destroyed_at, null, `GPU ${g.gpu_index} held by destroyed instance ${holder.id}`);
    assert.ok((JSON.parse(holder.gpu_indexes) as number[]).includes(g.gpu_index), `instance ${holder.id} does not know it holds GPU ${g.gpu_index}`);
  }
  for (const inst of insts) {
    const held = gpus.filter((g) => g.instance_id === inst.id).map((g) => g.gpu_index).sort();
    const says = (JSON.parse(inst.gpu_indexes) as number[]).slice().sort();
    assert.deepEqual(says, held, `instance ${inst.id}: gpu_indexes and the fleet disagree`);
    if (inst.destroyed_at !== null || inst.actual_status === 'stopped') assert.equal(held.length, 0, `instance ${inst.id} (${inst.actual_status}) holds GPUs`);
    else assert.equal(held.length, inst.num_gpus, `instance ${inst.id} (${inst.actual_status}, meant ${inst.intended_status}) holds ${held.length} GPUs`);
  }
  const free = gpus.filter((g) => g.instance_id === null).length;
  const waiting = insts.filter((i) => i.destroyed_at === null && i.actual_status === 'stopped' && i.intended_status === 'running');
  assert.ok(free === 0 || waiting.length === 0, `${free} GPU(s) free while instances ${waiting.map((i) => i.id)} wait for one`);
}

/** One round on a fresh machine: bids outbid by rentals, then everything at once. */
async function round(app: TestApp, users: { bidder: string; renter: string }): Promise<void> {
  const m = await addMachine(app, { num_gpus: GPUS, price_gpu: 0.5, min_bid: 0.1 });
  const offer = offerFor(m, 1);
  const bids: number[] = [];
  for (let i = 0; i < GPUS; i++) bids.push((await rentOk(app, offer, { price: 0.2 + i / 10 }, users.bidder)).id);
  const held: number[] = [];
  for (let i = 0; i < GPUS; i++) held.push((await rentOk(app, offer, {}, users.renter)).id);
  // Every bid is outbid now: stopped, meant to run, waiting for a GPU of this machine. Each request with the error
  // replies the race may give it besides 200 (which one wins is up to the race).
  const destroy = (id: number, key: string) => app.request('DELETE', `/api/v0/instances/${id}/`, { key });
  const ops: [string, Promise<{ status: number; body: any; raw: string }>, string[]][] = [
    ['destroy a running instance', destroy(held[0], users.renter), []],
    ['destroy another running instance', destroy(held[1], users.renter), []],
    ['stop a running instance', app.request('PUT', `/api/v0/instances/${held[2]}/`, { key: users.renter, body: { state: 'stopped' } }), []],
    ['destroy a third running instance', destroy(held[3], users.renter), []],
    ['destroy a waiting bid', destroy(bids[0], users.bidder), []],
    ['raise a waiting bid', app.request('PUT', `/api/v0/instances/bid_price/${bids[1]}/`, { key: users.bidder, body: { price: 0.9 } }), []],
    // Before the GPUs are freed every one is held on demand.
    ['start a waiting bid', app.request('PUT', `/api/v0/instances/${bids[2]}/`, { key: users.bidder, body: { state: 'running' } }), ['conflict']],
    ['rent on demand', rent(app, offer, {}, users.renter), ['offer_unavailable']],
    // Below the bids holding the machine's GPUs by then: refused as below the offer's minimum bid.
    ['rent by bid', rent(app, offer, { price: 0.8 }, users.bidder), ['offer_unavailable', 'bad_request']],
    // Faults lock the machine's instances too: one on the machine, one on an instance (one that holds its GPUs: an
    // outbid one would turn exited holding none, as the emulator's fault says, not a race).
    ['stall the machine', app.request('POST', '/_emu/faults', { body: { fault: 'stall', machine_id: m.machine_id } }), []],
    ['exit an instance', app.request('POST', '/_emu/faults', { body: { fault: 'exited', instance_id: held[4] } }), []],
  ];
  const replies = await Promise.all(ops.map(([, reply]) => reply));
  ops.forEach(([what, , errors], i) => {
    const r = replies[i];
    assert.ok(r.status === 200 || errors.includes(r.body?.error), `${what}: ${r.status} ${r.raw}`);
  });
  await assertConsistent(app, m.machine_id);
}

/**
 * The same on a real host's machine (gpuplane agent), with its agent's reports racing: one of every instance running
 * (it locks each), one with new hardware (it writes the machine's row).
 */
async function agentRound(app: TestApp, users: { bidder: string; renter: string }): Promise<void> {
  const gpus = Array.from({ length: GPUS }, (_, index) => ({ ...hardware().gpus[0], index, uuid: `GPU-${index}` }));
  const host = await hostWithMachine(app, { hw: { num_gpus: GPUS, gpus } });
  const offer = host.machineId * OFFER_ID_STRIDE + 1;
  const bids: number[] = [];
  for (let i = 0; i < GPUS; i++) bids.push((await rentOk(app, offer, { price: 0.25 + i / 10 }, users.bidder)).id);
  const held: number[] = [];
  for (let i = 0; i < GPUS; i++) held.push((await rentOk(app, offer, {}, users.renter)).id);
  const state = await desired(app, host);
  const running = state.instances.map((i: { instance_id: number; boot: number }) => observed(i.instance_id, i.boot));
  const report = (extra: Record<string, unknown> = {}) =>
    app.request('PUT', '/api/v0/agent/status/', { key: host.machineKey, body: { agent_version: '0.0.0-test', desired_version: state.version, observed: running, ...extra } });
  assert.equal((await report()).status, 200);
  const destroy = (id: number, key: string) => app.request('DELETE', `/api/v0/instances/${id}/`, { key });
  const ops: [string, Promise<{ status: number; body: any; raw: string }>, string[]][] = [
    ['destroy a running instance', destroy(held[0], users.renter), []],
    ['report', report(), []],
    ['destroy another running instance', destroy(held[1], users.renter), []],
    ['stop a running instance', app.request('PUT', `/api/v0/instances/${held[2]}/`, { key: users.renter, body: { state: 'stopped' } }), []],
    ['raise a waiting bid', app.request('PUT', `/api/v0/instances/bid_price/${bids[1]}/`, { key: users.bidder, body: { price: 0.9 } }), []],
    ['start a waiting bid', app.request('PUT', `/api/v0/instances/${bids[2]}/`, { key: users.bidder, body: { state: 'running' } }), ['conflict']],
    ['report new hardware', report({ hardware: hardware({ num_gpus: GPUS, gpus, hostname: 'renamed' }) }), []],
    ['rent on demand', rent(app, offer, {}, users.renter), ['offer_unavailable']],
    ['destroy a waiting bid', destroy(bids[0], users.bidder), []],
  ];
  const replies = await Promise.all(ops.map(([, reply]) => reply));
  ops.forEach(([what, , errors], i) => {
    const r = replies[i];
    assert.ok(r.status === 200 || errors.includes(r.body?.error), `${what}: ${r.status} ${r.raw}`);
  });
  await assertConsistent(app, host.machineId);
}

for (const dialect of DIALECTS) {
  describe(`instances: lock order [${dialect}]`, () => {
    let app: TestApp | undefined;
    let database: Awaited<ReturnType<typeof privateDatabase>> | undefined;
    // The two users of both kinds of rounds, made here so that either test runs alone.
    let bidder = '';
    let renter = '';
    before(async () => {
      if (dialect === 'postgres') database = await privateDatabase();
      app = await createTestApp(dialect, database ? { config: { GPUPLANE_DATABASE_URL: database.url } } : {});
      bidder = (await app.createUser({ credit: 100_000 })).api_key;
      renter = (await app.createUser({ credit: 100_000 })).api_key;
    });
    after(async () => {
      await app?.close().catch(() => undefined);
      await database?.drop();
    });

    test(`${ROUNDS} rounds of destroys, stops, a bid change, a start, rentals and faults on one machine at once`, async () => {
      for (let i = 0; i < ROUNDS; i++) await round(app!, { bidder, renter });
    });

    test(`${ROUNDS} rounds of the same on a real host's machine, its agent's reports racing`, async () => {
      for (let i = 0; i < ROUNDS; i++) await agentRound(app!, { bidder, renter });
    });

    if (dialect === 'postgres') {
      // Of the rounds above, as they ran (alone, it counts none): a backend's deadlocks reach pg_stat_database when it
      // ends, so the app is closed first.
      test('no transaction of those rounds deadlocked', async () => {
        await app!.close();
        app = undefined;
        const n = await database!.deadlocks();
        assert.equal(n, 0, `${n} transactions deadlocked (each rerun, at a second of deadlock_timeout)`);
      });
    }
  });
}
