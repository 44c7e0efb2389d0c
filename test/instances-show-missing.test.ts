// A missing instance, as the clients read it (issue 29 item 2; the client wins over the spec's 404):
// - `GET /api/v0/instances/{id}/` of an instance that never existed, is destroyed or is another's answers 200
//   `{"instances": null}`: vast.py's `show instance` prints "not found or no longer exists" on exactly that and fails
//   with an HTTP error on a 404; dstack polls the route and stops on an error.
// - A destroy of such an instance answers 404 `no_such_instance`, which dstack reads as "already gone" (a plain
//   `not_found` made it report a failed termination). The three cases look alike, so nobody learns of another's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { addMachine, offerFor, rentOk, show } from './instances-fixtures.js';
import { ERROR_STATUS } from '../src/platform/errors.js';

const NEVER = 987654321;

forEachDialect('a missing instance', (app) => {
  test('show: 200 {"instances": null} when it never existed, is destroyed, or is another\'s; the own live one is shown', async () => {
    const m = await addMachine(app());
    const { id: destroyed } = await rentOk(app(), offerFor(m, 1));
    assert.equal((await app().request('DELETE', `/api/v0/instances/${destroyed}/`)).status, 200);
    const other = await app().createUser({ credit: 50 });
    const { id: theirs } = await rentOk(app(), offerFor(m, 1), {}, other.api_key);
    for (const [what, id] of [['never existed', NEVER], ['destroyed', destroyed], ['another user\'s', theirs]] as const) {
      const res = await show(app(), id);
      assert.equal(res.status, 200, `${what}: ${res.raw}`);
      assert.deepEqual(res.body, { instances: null }, what);
    }
    const own = await show(app(), theirs, other.api_key);
    assert.equal(own.body.instances.id, theirs);
  });

  test('destroy: 404 no_such_instance when it never existed, is already destroyed, or is another\'s', async () => {
    assert.equal(ERROR_STATUS.no_such_instance, 404, 'in the one error table');
    const m = await addMachine(app());
    const { id } = await rentOk(app(), offerFor(m, 1));
    const other = await app().createUser({ credit: 50 });
    const { id: theirs } = await rentOk(app(), offerFor(m, 1), {}, other.api_key);
    assert.equal((await app().request('DELETE', `/api/v0/instances/${id}/`)).status, 200);
    for (const [what, gone] of [['never existed', NEVER], ['already destroyed', id], ['another user\'s', theirs]] as const) {
      const res = await app().request('DELETE', `/api/v0/instances/${gone}/`);
      assert.equal(res.status, 404, `${what}: ${res.raw}`);
      assert.deepEqual(res.body, { success: false, error: 'no_such_instance', msg: `instance ${gone} not found` }, what);
    }
    // Theirs was not touched; a stop of a destroyed instance is still the general not_found.
    assert.equal((await show(app(), theirs, other.api_key)).body.instances.intended_status, 'running');
    const stop = await app().request('PUT', `/api/v0/instances/${id}/`, { body: { state: 'stopped' } });
    assert.equal(stop.status, 404);
    assert.equal(stop.body.error, 'not_found');
  });
});
