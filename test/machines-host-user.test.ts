// A host is a user: the fleet's host row of a user is created once, even when two transactions race for it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';

forEachDialect('fleet: a host is a user', (app) => {
  test('hostOfUser creates one host per user and finds it again; userOfHost answers the user', async () => {
    const { services, store } = app();
    const a = (await app().createUser()).user;
    const b = (await app().createUser()).user;
    const [h1, h2] = await Promise.all([
      store.db.transaction().execute((tx) => services.fleet.hostOfUser(tx, a.id)),
      store.db.transaction().execute((tx) => services.fleet.hostOfUser(tx, a.id)),
    ]);
    assert.equal(h1, h2);
    const hb = await store.db.transaction().execute((tx) => services.fleet.hostOfUser(tx, b.id));
    assert.notEqual(hb, h1);
    assert.equal(await services.fleet.userOfHost(h1), a.id);
    assert.equal(await services.fleet.userOfHost(hb), b.id);
    const rows = await store.db.selectFrom('fleet_hosts').select('id').where('user_id', '=', a.id).execute();
    assert.equal(rows.length, 1);
  });

  test('the simulated fleet hosts belong to no user', async () => {
    const { services, store } = app();
    const sim = await store.db.selectFrom('fleet_hosts').select('id').where('user_id', 'is', null).limit(1).executeTakeFirst();
    assert.ok(sim, 'the emulator seeds simulated hosts');
    assert.equal(await services.fleet.userOfHost(sim.id), null);
  });
});
