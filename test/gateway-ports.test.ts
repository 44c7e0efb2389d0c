// The SSH gateway's port mapping (src/gateway/gateway-contract.ts; README "Connecting to an instance"), its per-source
// limits (gateway-limits.ts), and the instance view's ssh_host/ssh_port on both databases.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { gatewayEntries, gatewayPorts, gatewaySlots } from '../src/gateway/gateway-contract.js';
import { GatewayLimits } from '../src/gateway/gateway-limits.js';
import { VirtualClock } from '../src/platform/clock.js';
import { loadConfig } from '../src/config.js';
import { forEachDialect } from './helpers/harness.js';
import { addMachine, offerFor, rentOk, statusOf, untilRunning } from './instances-fixtures.js';

const config = { gatewayHost: 'ssh.example.com', gatewayPorts: { first: 10000, last: 65535 } };

describe('gateway ports', () => {
  test('an SSH runtype: ssh_port = first + 3 × (id mod slots), logged into there; the copy port is two above', () => {
    assert.equal(gatewaySlots(config.gatewayPorts), 18512);
    assert.deepEqual(gatewayPorts(config, 701, 'ssh_proxy'), { ssh_host: 'ssh.example.com', ssh_port: 12103, ssh_login_port: 12103, copy_port: 12105 });
    assert.deepEqual(gatewayPorts(config, 701, 'ssh_direct'), { ssh_host: 'ssh.example.com', ssh_port: 12103, ssh_login_port: 12103, copy_port: 12105 });
    assert.deepEqual(gatewayEntries(config, 701, 'ssh_proxy'), [{ port: 12103, role: 'ssh' }, { port: 12105, role: 'copy' }]);
  });

  test('a Jupyter runtype: SSH at ssh_port + 1, where the vastai client\'s ssh-url goes', () => {
    const p = gatewayPorts(config, 5, 'jupyter_proxy')!;
    assert.deepEqual(p, { ssh_host: 'ssh.example.com', ssh_port: 10015, ssh_login_port: 10016, copy_port: 10017 });
    assert.deepEqual(gatewayEntries(config, 5, 'jupyter_direct'), [{ port: 10016, role: 'ssh' }, { port: 10017, role: 'copy' }]);
  });

  test('args has no ports; ids past the range wrap onto the same ports, always inside the range', () => {
    assert.equal(gatewayPorts(config, 9, 'args'), null);
    assert.deepEqual(gatewayEntries(config, 9, 'args'), []);
    assert.equal(gatewayPorts(config, 18512 + 7, 'ssh_proxy')!.ssh_port, gatewayPorts(config, 7, 'ssh_proxy')!.ssh_port);
    const small = { gatewayHost: 'h', gatewayPorts: { first: 20000, last: 20010 } }; // 11 ports: 3 slots, 20009-20010 unused
    const seen = new Set<number>();
    for (let id = 1; id <= 50; id++) {
      const p = gatewayPorts(small, id, 'jupyter_proxy')!;
      for (const port of [p.ssh_port, p.ssh_login_port, p.copy_port]) {
        assert.ok(port >= 20000 && port <= 20008, `${id}: ${port}`);
        seen.add(port);
      }
    }
    assert.equal(seen.size, 9);
  });

  test('the settings\' defaults give the same mapping', () => {
    const c = loadConfig({ GPUPLANE_PUBLIC_URL: 'https://gpu.example.com' });
    assert.deepEqual(gatewayPorts(c, 701, 'ssh_proxy'), { ssh_host: 'gpu.example.com', ssh_port: 12103, ssh_login_port: 12103, copy_port: 12105 });
  });
});

describe('gateway limits', () => {
  const settings = { connectionsPerSource: 2, failedLogins: 3, failedLoginWindow: 60, blockSeconds: 100 };

  test('a source holds at most its cap of connections; a closed one frees a place', () => {
    const l = new GatewayLimits(settings, new VirtualClock(1000));
    assert.equal(l.admit('a'), true);
    assert.equal(l.admit('a'), true);
    assert.equal(l.admit('a'), false);
    assert.equal(l.admit('b'), true, 'another source is counted apart');
    l.release('a');
    assert.equal(l.admit('a'), true);
  });

  test('failed logins within the window block the source for the block time; older ones age out', () => {
    const clock = new VirtualClock(1000);
    const l = new GatewayLimits(settings, clock);
    l.failed('a');
    l.failed('a');
    clock.set(1061); // the first two are past the window
    l.failed('a');
    assert.equal(l.blockedFor('a'), 0);
    l.failed('a');
    assert.equal(l.blockedFor('a'), 0);
    l.failed('a'); // three within the window
    assert.equal(l.blockedFor('a'), 100);
    assert.equal(l.blockedFor('b'), 0, 'only that source');
    clock.set(1061 + 99.5);
    assert.equal(l.blockedFor('a'), 1);
    clock.set(1061 + 100);
    assert.equal(l.blockedFor('a'), 0);
  });
});

forEachDialect('gateway ports in the instance view', (app) => {
  test('a running proxied instance shows the gateway\'s host and its port; not running, none', async () => {
    const m = await addMachine(app());
    const renter = await app().createUser();
    const { id } = await rentOk(app(), offerFor(m, 1), { image: 'busybox', runtype: 'jupyter_proxy' }, renter.api_key);
    assert.equal((await statusOf(app(), id, renter.api_key)).ssh_port, null);
    await untilRunning(app(), id, renter.api_key);
    const inst = await statusOf(app(), id, renter.api_key);
    assert.equal(inst.ssh_host, 'gw.example.net');
    assert.equal(inst.ssh_port, 30000 + 3 * (id % 10));
    const list = await app().request('GET', '/api/v0/instances/', { key: renter.api_key });
    const listed = list.body.instances.find((i: { id: number }) => i.id === id);
    assert.equal(listed.ssh_host, 'gw.example.net');
    assert.equal(listed.ssh_port, inst.ssh_port);
  });
}, { config: { GPUPLANE_GATEWAY_HOST: 'gw.example.net', GPUPLANE_GATEWAY_PORTS: '30000-30029' } });
