// The Connect panel (console/src/lib/connect.ts, issue 32): the lines of each runtype, the SSH address as the vastai
// client's ssh-url computes it (client-compat-connect.md), the Jupyter link, the port URLs, and nothing while stopped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connectInfo, portEntries, portGrantPath, sshAddress, terminalHref } from '../console/src/lib/connect.js';

const running = { actual_status: 'running' };

test('an SSH proxy instance: ssh, scp, rsync at ssh_host:ssh_port; vastai copy both ways; its port URLs; the terminal', () => {
  const c = connectInfo({
    id: 701, ...running, image_runtype: 'ssh_proxy', ssh_host: 'gpuplane.example.com', ssh_port: 12103, public_ipaddr: '10.0.0.5',
    ports: { '8000/tcp': [{ HostIp: '0.0.0.0', HostPort: '41000' }] }, port_urls: { '8000/tcp': 'https://701-8000.ports.example.com/' },
  });
  assert.deepEqual(c.ssh, [
    { what: 'SSH command', text: 'ssh -p 12103 root@gpuplane.example.com' },
    { what: 'scp command', text: 'scp -P 12103 ./file root@gpuplane.example.com:/workspace/' },
    { what: 'rsync command', text: "rsync -avz -e 'ssh -p 12103' ./data/ root@gpuplane.example.com:/workspace/data/" },
  ]);
  assert.deepEqual(c.copy, [
    { what: 'vastai copy (upload)', text: 'vastai copy ./data 701:/workspace/data' },
    { what: 'vastai copy (download)', text: 'vastai copy 701:/workspace/data ./data' },
  ]);
  assert.equal(c.hasJupyter, false);
  assert.equal(c.jupyterUrl, null);
  assert.deepEqual(c.ports, [{ key: '8000/tcp', port: 8000, url: 'https://701-8000.ports.example.com/', jupyter: false }]);
  assert.equal(c.terminalHref, '/instances/terminal?id=701');
  assert.equal(terminalHref(5), '/instances/terminal?id=5');
  assert.equal(portGrantPath(701, 8000), '/api/v0/instances/701/ports/8000/grant/');
});

test('ssh-url\'s address: the host\'s 22/tcp when published, else the gateway, plus 1 for Jupyter runtypes', () => {
  const direct = { id: 1, ...running, image_runtype: 'ssh_direct', ssh_host: '10.0.0.5', ssh_port: 40022, public_ipaddr: '10.0.0.5', ports: { '22/tcp': [{ HostPort: '40022' }] } };
  assert.deepEqual(sshAddress(direct), { host: '10.0.0.5', port: 40022 });
  const jupDirect = { id: 2, ...running, image_runtype: 'jupyter_direct', ssh_host: '10.0.0.5', ssh_port: 40122, public_ipaddr: '10.0.0.5', ports: { '22/tcp': [{ HostPort: '40122' }], '8080/tcp': [{ HostPort: '40123' }] } };
  assert.deepEqual(sshAddress(jupDirect), { host: '10.0.0.5', port: 40122 }, 'a published 22/tcp wins: no +1');
  const jupProxy = { id: 3, ...running, image_runtype: 'jupyter_proxy', ssh_host: 'gw.example', ssh_port: 10009, public_ipaddr: '10.0.0.5', ports: {} };
  assert.deepEqual(sshAddress(jupProxy), { host: 'gw.example', port: 10010 });
  assert.equal(connectInfo(jupProxy).ssh![0].text, 'ssh -p 10010 root@gw.example');
  assert.equal(sshAddress({ id: 4, ...running, image_runtype: 'args', ssh_host: 'gw.example', ssh_port: 10012 }), null);
});

test('a Jupyter instance: its link (token included) and Jupyter\'s port marked; SSH too', () => {
  const url = 'http://3-8080.localhost:8080/?token=abc';
  const c = connectInfo({
    id: 3, ...running, image_runtype: 'jupyter_proxy', ssh_host: 'gw.example', ssh_port: 10009, ports: {},
    port_urls: { '8080/tcp': 'http://3-8080.localhost:8080/' }, jupyter_url: url, jupyter_token: 'abc',
  });
  assert.equal(c.hasJupyter, true);
  assert.equal(c.jupyterUrl, url);
  assert.deepEqual(c.ports, [{ key: '8080/tcp', port: 8080, url: 'http://3-8080.localhost:8080/', jupyter: true }]);
  assert.equal(c.ssh!.length, 3);
  // Not reported yet (null): no link, but the runtype still has Jupyter.
  assert.equal(connectInfo({ id: 3, ...running, image_runtype: 'jupyter_direct', jupyter_url: null }).jupyterUrl, null);
});

test('runtype args: no SSH, scp, rsync or copy lines, no Jupyter; its ports and the terminal stay', () => {
  const c = connectInfo({
    id: 9, ...running, image_runtype: 'args', ssh_host: null, ssh_port: null, public_ipaddr: '10.0.0.5',
    ports: { '22/tcp': [{ HostPort: '40000' }] }, port_urls: { '22/tcp': 'http://9-22.localhost/', '9000/tcp': 'http://9-9000.localhost/' },
  });
  assert.equal(c.hasSsh, false);
  assert.equal(c.ssh, null);
  assert.equal(c.copy, null);
  assert.equal(c.hasJupyter, false);
  assert.deepEqual(c.ports.map((p) => p.port), [22, 9000]);
  assert.equal(c.terminalHref, '/instances/terminal?id=9');
});

test('a stopped instance: nothing to copy or open (the panel says it is available while it runs)', () => {
  const c = connectInfo({
    id: 4, actual_status: 'stopped', image_runtype: 'jupyter_proxy', ssh_host: 'gw.example', ssh_port: 10012,
    port_urls: { '8080/tcp': 'http://4-8080.localhost/' }, jupyter_url: 'http://4-8080.localhost/?token=x',
  });
  assert.equal(c.running, false);
  assert.equal(c.ssh, null);
  assert.equal(c.copy, null);
  assert.equal(c.jupyterUrl, null);
  assert.deepEqual(c.ports, []);
});

test('port_urls entries that are not TCP ports with a string URL are left out; the rest in port order', () => {
  assert.deepEqual(portEntries({ id: 1, actual_status: 'running', port_urls: { '9000/tcp': 'u9', '53/udp': 'x', '80/tcp': 'u80', bad: 'y', '81/tcp': 5 } }).map((p) => p.key), ['80/tcp', '9000/tcp']);
});
