// Issue 29 item 14, the server's half: a real host's agent says whether each container's `disk` is enforced (its
// storage driver has a size limit), at registration and in status reports, and the host sees it in `show machine`
// (`disk_limit`: true, false where the operator ran the agent with --allow-unlimited-disk, null where none was said).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { hardware, hostWithMachine, report, type Host } from './agent-server-fixtures.js';

forEachDialect('agent disk limit', (app) => {
  const shown = async (h: Host) => {
    const r = await app().request('GET', `/api/v0/machines/${h.machineId}`, { key: h.apiKey });
    assert.equal(r.status, 200, r.raw);
    return r.body[0].disk_limit;
  };

  test('show machine says whether renters\' disk is limited, as the agent reported it', async () => {
    const limited = await hostWithMachine(app(), { list: false, hw: { disk_limit: true } });
    const unlimited = await hostWithMachine(app(), { list: false, hw: { disk_limit: false } });
    const older = await hostWithMachine(app(), { list: false });
    assert.deepEqual([await shown(limited), await shown(unlimited), await shown(older)], [true, false, null]);
    // A daemon that refused a size later (xfs without pquota): the next report's hardware says so.
    await report(app(), limited, [], null, { hardware: hardware({ disk_limit: false }) });
    assert.equal(await shown(limited), false);
    const listed = await app().request('GET', '/api/v0/machines/', { key: unlimited.apiKey });
    assert.equal(listed.body.machines[0].disk_limit, false, 'show machines too');
  });

  test('a report\'s disk_limit is a boolean', async () => {
    const h = await hostWithMachine(app(), { list: false });
    const r = await app().request('PUT', '/api/v0/agent/status/', {
      key: h.machineKey, body: { agent_version: '0.0.0-test', desired_version: null, observed: [], hardware: { ...hardware(), disk_limit: 'yes' } },
    });
    assert.equal(r.status, 400);
    assert.match(r.body.msg, /disk_limit/);
  });
});
