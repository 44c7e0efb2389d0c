// The SSH gateway over the real tunnel (issue 31): a listening server with its gateway started, the real agent tunnel
// client connected with a data plane that splices `ssh` streams to a real sshd the test starts (standing in for the
// agent's SSH endpoint, tested in test/agent-ssh-*.test.ts), and the real OpenSSH client through the gateway: the
// bytes cross the reverse HTTP/2 stream both ways, the agent's trailers reach the audit log, and once the agent is
// gone the gateway says the host is not connected, as SSH.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { once } from 'node:events';
import { TunnelRefusal, type TunnelHandler } from '../src/agent/agent-tunnel.js';
import { forEachDialect } from './helpers/harness.js';
import { desired, hostWithMachine, observed, report, type Host } from './agent-server-fixtures.js';
import { rentOk, statusOf } from './instances-fixtures.js';
import { freePortRange, ssh, startSshd, type Sshd } from './gateway-fixtures.js';
import { agentTunnel, until } from './tunnel-fixtures.js';

const range = await freePortRange(30);
let sshd: Sshd;
before(async () => {
  sshd = await startSshd();
});
after(async () => {
  await sshd?.stop();
});

/** The agent's data plane in this test: `ssh` streams go to the test's sshd; the trailers say who logged in. */
const plane: TunnelHandler = async (target, stream) => {
  if (target.kind !== 'ssh') throw new TunnelRefusal(404, `no ${target.kind} endpoint in this test`);
  const s = connect(sshd.port, '127.0.0.1');
  await once(s, 'connect');
  stream.pipe(s);
  s.pipe(stream);
  s.on('error', () => stream.destroy());
  await new Promise<void>((resolve) => {
    s.once('close', () => resolve());
    stream.once('finish', () => resolve());
  });
  return { auth: 'ok', user: 'root' };
};

forEachDialect('ssh gateway over the agent tunnel', (app) => {
  let url: string;
  let host: Host;

  before(async () => {
    await app().app.listen({ host: '127.0.0.1', port: 0 });
    url = `http://127.0.0.1:${(app().app.server.address() as { port: number }).port}`;
    await app().services.gateway.start(); // the real tunnels (services.ts), not a fake
    host = await hostWithMachine(app());
  });

  test('real ssh through the gateway and the agent\'s tunnel to the instance\'s SSH endpoint; the trailers are audited; agent gone: not connected', async () => {
    const renter = await app().createUser();
    const { id } = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox', runtype: 'ssh_proxy' }, renter.api_key);
    const d = await desired(app(), host);
    await report(app(), host, d.instances.map((i: { instance_id: number; boot: number }) => observed(i.instance_id, i.boot, { ports: {} })), d.version);
    const inst = await statusOf(app(), id, renter.api_key);
    assert.equal(inst.actual_status, 'running');
    assert.equal(inst.ssh_port, range.first + 3 * (id % 10));
    await app().services.gateway.sync();

    const agent = agentTunnel(url, host.machineKey, plane);
    try {
      await until(() => app().services.tunnels.api.connected(host.machineId), 'the agent\'s tunnel', 30_000);
      // 1 MB from the instance to the renter, through the reverse HTTP/2 stream.
      const r = await ssh(sshd.key, inst.ssh_port, 'head -c 1000000 /dev/zero | tr "\\0" x');
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stdout, 'x'.repeat(1_000_000));
      await until(async () => {
        const logs = (await app().request('GET', '/api/v0/audit_logs/', { key: renter.api_key })).body as { action: string; args: { params: Record<string, unknown> } }[];
        const e = logs.find((l) => l.action === 'instance.ssh_session' && l.args.params.instance_id === id);
        return e !== undefined && e.args.params.login === 'root' && e.args.params.auth === 'ok' && (e.args.params.bytes_out as number) > 1_000_000;
      }, 'the session\'s audit record with the agent\'s trailers', 30_000);
    } finally {
      await agent.stop();
    }
    await until(async () => !(await app().services.tunnels.api.connected(host.machineId)), 'the tunnel gone', 30_000);
    const gone = await ssh(sshd.key, inst.ssh_port, 'true');
    assert.equal(gone.status, 255);
    assert.match(gone.stderr, new RegExp(`gpuplane: the host of instance ${id} is not connected`));
  });
}, { config: { GPUPLANE_GATEWAY_PORTS: range.env, GPUPLANE_GATEWAY_BIND: '127.0.0.1' } });
