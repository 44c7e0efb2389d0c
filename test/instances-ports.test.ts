// Direct ports (spec: Runtype values): a direct runtype needs the machine's direct ports; each GPU owns an equal
// slice of the machine's range, so two instances on one machine never get the same host port.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { addMachine, BOOT_MAX_S, offerFor, rent, rentOk, statusOf } from './instances-fixtures.js';

forEachDialect('instances: direct ports', (app) => {
  test('an offer without direct ports refuses ssh_direct with a 400 that says why, and rents ssh_proxy', async () => {
    const m = await addMachine(app(), { num_gpus: 1, direct_port_count: 0 });
    const direct = await rent(app(), offerFor(m, 1), { runtype: 'ssh_direct' });
    assert.equal(direct.status, 400, direct.raw);
    assert.equal(direct.body.error, 'bad_request');
    assert.match(direct.body.msg, /0 direct ports/);
    const proxy = await rentOk(app(), offerFor(m, 1), { runtype: 'ssh_proxy' });
    await app().advance(BOOT_MAX_S);
    const inst = await statusOf(app(), proxy.id);
    assert.equal(inst.actual_status, 'running');
    assert.deepEqual(inst.ports, {});
  });

  test('more ports than the GPUs\' slices hold is a 400; nothing is rented', async () => {
    // 4 ports over 2 GPUs: a 1-GPU bundle holds 2 ports; jupyter_direct (8080, 22) plus one -p mapping needs 3.
    const m = await addMachine(app(), { num_gpus: 2, direct_port_count: 4 });
    const res = await rent(app(), offerFor(m, 1), { runtype: 'jupyter_direct', env: { '-p 7000:7000': '1' } });
    assert.equal(res.status, 400, res.raw);
    assert.match(res.body.msg, /need 3/);
    const both = await rentOk(app(), offerFor(m, 2), { runtype: 'jupyter_direct', env: { '-p 7000:7000': '1' } });
    await app().advance(BOOT_MAX_S);
    const inst = await statusOf(app(), both.id);
    assert.deepEqual(Object.keys(inst.ports).sort(), ['22/tcp', '7000/tcp', '8080/tcp']);
  });

  test('two instances on one machine get disjoint host ports', async () => {
    const m = await addMachine(app(), { num_gpus: 2, direct_port_count: 8 });
    const a = await rentOk(app(), offerFor(m, 1), { runtype: 'jupyter_direct', env: { '-p 9000:9000': '1' } });
    const b = await rentOk(app(), offerFor(m, 1), { runtype: 'jupyter_direct', env: { '-p 9000:9000': '1' } });
    await app().advance(BOOT_MAX_S);
    const hostPorts = async (id: number) =>
      Object.values((await statusOf(app(), id)).ports as Record<string, { HostPort: string }[]>).map((v) => Number(v[0].HostPort));
    const pa = await hostPorts(a.id);
    const pb = await hostPorts(b.id);
    assert.equal(pa.length, 3);
    assert.equal(pb.length, 3);
    assert.equal(new Set([...pa, ...pb]).size, 6, `ports clash: ${pa} / ${pb}`);
    const inst = await statusOf(app(), a.id);
    assert.equal(inst.ssh_port, Number((inst.ports['22/tcp'] as { HostPort: string }[])[0].HostPort));
  });
});
