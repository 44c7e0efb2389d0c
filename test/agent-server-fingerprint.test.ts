// The digest by which a machine's desired state is reused (agent-server-store.ts `fingerprints`, agent-server-polls.ts)
// names which instances are live, not only how many: one destroyed and another rented between two reads kept the
// count and both sums (a new instance's state_version and generation start as the old one's did), and the agent was
// handed the stale state: the destroyed instance still listed, the new one missing (found by the gateway's tests).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { desired, hostWithMachine } from './agent-server-fixtures.js';
import { rentOk } from './instances-fixtures.js';

forEachDialect('desired state: which instances', (app) => {
  test('an instance destroyed and another rented between two reads: the second read lists the new one only', async () => {
    const host = await hostWithMachine(app());
    const renter = await app().createUser({ credit: 100 });
    const first = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox' }, renter.api_key);
    assert.deepEqual((await desired(app(), host)).instances.map((i: any) => i.instance_id), [first.id]);
    const gone = await app().request('DELETE', `/api/v0/instances/${first.id}/`, { key: renter.api_key });
    assert.equal(gone.status, 200, gone.raw);
    const second = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox' }, renter.api_key);
    assert.notEqual(second.id, first.id);
    assert.deepEqual((await desired(app(), host)).instances.map((i: any) => i.instance_id), [second.id]);
  });
});
