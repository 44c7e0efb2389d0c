// The SSH gateway (README "Connecting to an instance"; src/gateway/) with the real OpenSSH client against a real sshd:
// the instance view's ssh_host/ssh_port are the gateway's; `ssh` to them reaches the instance's SSH endpoint through
// its host's tunnel (a fake TunnelsApi whose streams are TCP connections to the test's sshd; the tunnel is tested in
// test/tunnel-*.test.ts); Jupyter runtypes log in at ssh_port + 1 (the vastai client's ssh-url); refusals are said as
// SSH (simulated machine, not running, host not connected, too many failed logins); the audit log records each
// connection; a destroyed instance's session ends and the listeners follow the live instances.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { once } from 'node:events';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { desired, hostWithMachine, observed, report, type Host } from './agent-server-fixtures.js';
import { addMachine, offerFor, rentOk, statusOf, untilRunning } from './instances-fixtures.js';
import { FakeTunnels, freePortRange, openSession, ssh, startSshd, until, type Sshd } from './gateway-fixtures.js';

const SLOTS = 100;
const range = await freePortRange(SLOTS * 3);
const GATEWAY_HOST = 'ssh.gpu.test';
const FAILED_LOGINS = 3;
const BLOCK_S = 300;
const PER_SOURCE = 6;

let sshd: Sshd;
before(async () => {
  sshd = await startSshd();
});
after(async () => {
  await sshd?.stop();
});

/** Where the instance's ports start: slot id mod floor(span / 3), three ports each. */
const firstPort = (id: number) => range.first + 3 * (id % SLOTS);

forEachDialect('ssh gateway', (app) => {
  let fake: FakeTunnels;
  let host: Host;
  let renter: { user: { id: number }; api_key: string };

  before(async () => {
    fake = new FakeTunnels(sshd.port);
    app().services.gateway.useTunnels(fake);
    await app().services.gateway.start();
    host = await hostWithMachine(app());
    renter = await app().createUser();
    fake.connectedMachines.add(host.machineId);
  });

  /** The host's agent reports every instance of its desired state running, once that state has `id` (no port published: proxied). */
  async function reportRunning(id?: number): Promise<void> {
    // A desired state read may be a moment behind a change (agent-server-changes.ts): read until it has the instance.
    let d = await desired(app(), host);
    for (let i = 0; id !== undefined && !d.instances.some((x: { instance_id: number }) => x.instance_id === id); i++) {
      if (i === 250) throw new Error(`instance ${id} never appeared in its machine's desired state: ${JSON.stringify(d.instances)}`);
      await new Promise((r) => setTimeout(r, 20));
      d = await desired(app(), host);
    }
    await report(app(), host, d.instances.map((i: { instance_id: number; boot: number }) => observed(i.instance_id, i.boot, { ports: {} })), d.version);
  }

  /** Rents one GPU of the host's machine; with `run`, its agent reports it running. */
  async function rentOnHost(runtype: string, run = true): Promise<number> {
    const { id } = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox', runtype }, renter.api_key);
    if (run) {
      await reportRunning(id);
      assert.equal((await statusOf(app(), id, renter.api_key)).actual_status, 'running');
    }
    await app().services.gateway.sync();
    return id;
  }

  async function destroy(id: number): Promise<void> {
    const r = await app().request('DELETE', `/api/v0/instances/${id}/`, { key: renter.api_key });
    assert.equal(r.status, 200, r.raw);
    // The agent reads its desired state after the change, as a polling agent would: the state it built last is then
    // not one with this instance (its fingerprint, agent-server-polls.ts, could match a next rent's).
    await desired(app(), host);
  }

  async function sessionsOf(a: TestApp, id: number) {
    const r = await a.request('GET', '/api/v0/audit_logs/', { key: renter.api_key });
    assert.equal(r.status, 200, r.raw);
    return (r.body as { action: string; ip_address: string; api_route: string; args: { params: Record<string, any> } }[])
      .filter((e) => e.action === 'instance.ssh_session' && e.args.params.instance_id === id);
  }

  test('an SSH instance: ssh_host and ssh_port are the gateway\'s, and real ssh reaches its SSH endpoint through the host\'s tunnel', async () => {
    const id = await rentOnHost('ssh_proxy');
    const inst = await statusOf(app(), id, renter.api_key);
    assert.equal(inst.ssh_host, GATEWAY_HOST);
    assert.equal(inst.ssh_port, firstPort(id));
    assert.deepEqual(app().services.gateway.listening().get(firstPort(id)), { instanceId: id, role: 'ssh' });
    assert.deepEqual(app().services.gateway.listening().get(firstPort(id) + 2), { instanceId: id, role: 'copy' });
    assert.equal(app().services.gateway.listening().has(firstPort(id) + 1), false, 'an SSH runtype has no port +1');

    const before = fake.opened.length;
    const r = await ssh(sshd.key, inst.ssh_port, 'echo hello-through-the-gateway');
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.trim(), 'hello-through-the-gateway');
    const opened = fake.opened.slice(before);
    assert.equal(opened.length, 1);
    assert.equal(opened[0].machineId, host.machineId);
    assert.deepEqual(opened[0].target, { kind: 'ssh', instanceId: id });
    assert.match(opened[0].info.source, /^127\.0\.0\.1:\d+$/);

    // The copy port always reaches the agent's own SSH server (where `vastai copy`'s vastai_kaalia user lives).
    const c = await ssh(sshd.key, inst.ssh_port + 2, 'echo copy-port');
    assert.equal(c.status, 0, c.stderr);
    assert.equal(c.stdout.trim(), 'copy-port');
    assert.deepEqual(fake.opened.at(-1)!.target, { kind: 'agent-ssh', instanceId: id });

    // Each connection is in the owner's audit log: who (the login the agent reported), which instance, from where,
    // when, how long, how many bytes.
    await until(async () => (await sessionsOf(app(), id)).length >= 2);
    const [copy, login] = await sessionsOf(app(), id); // newest first
    for (const e of [copy, login]) {
      assert.equal(e.ip_address, '127.0.0.1');
      assert.equal(e.args.params.outcome, 'connected');
      assert.equal(e.args.params.login, 'root');
      assert.equal(e.args.params.auth, 'ok');
      assert.ok(e.args.params.bytes_in > 0 && e.args.params.bytes_out > 0, JSON.stringify(e.args.params));
      assert.equal(typeof e.args.params.duration_s, 'number');
      assert.equal(typeof e.args.params.started_at, 'number');
    }
    assert.equal(login.args.params.port, inst.ssh_port);
    assert.equal(login.args.params.role, 'ssh');
    assert.equal(copy.args.params.role, 'copy');
    assert.equal(login.api_route, `ssh ${GATEWAY_HOST}:${inst.ssh_port}`);
    await destroy(id);
  });

  test('a Jupyter instance logs in at ssh_port + 1, as the vastai client\'s ssh-url computes it', async () => {
    const id = await rentOnHost('jupyter_proxy');
    const inst = await statusOf(app(), id, renter.api_key);
    assert.equal(inst.ssh_host, GATEWAY_HOST);
    assert.equal(inst.ssh_port, firstPort(id));
    const listening = app().services.gateway.listening();
    assert.equal(listening.has(inst.ssh_port), false, 'Jupyter\'s own port is not served by the SSH gateway');
    assert.deepEqual(listening.get(inst.ssh_port + 1), { instanceId: id, role: 'ssh' });
    const r = await ssh(sshd.key, inst.ssh_port + 1, 'echo jupyter-ssh');
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.trim(), 'jupyter-ssh');
    assert.deepEqual(fake.opened.at(-1)!.target, { kind: 'ssh', instanceId: id });
    await destroy(id);
  });

  test('refusals are said as SSH: an instance not running, a host not connected', async () => {
    const opens = fake.opened.length;
    // Rented on the real host, not yet reported running.
    const waiting = await rentOnHost('ssh_proxy', false);
    const w = await ssh(sshd.key, firstPort(waiting), 'true');
    assert.equal(w.status, 255);
    assert.match(w.stderr, new RegExp(`gpuplane: instance ${waiting} is not running`));
    assert.match(w.stderr, /Received disconnect from 127\.0\.0\.1 port \d+:7: instance \d+ is not running/, 'the disconnect carries the reason');
    const refused = await sessionsOf(app(), waiting);
    assert.equal(refused[0]?.args.params.outcome, 'refused');
    await destroy(waiting);

    // Running, but its host's agent has no tunnel now.
    const id = await rentOnHost('ssh_proxy');
    fake.connectedMachines.delete(host.machineId);
    try {
      const n = await ssh(sshd.key, firstPort(id), 'true');
      assert.equal(n.status, 255);
      assert.match(n.stderr, new RegExp(`gpuplane: the host of instance ${id} is not connected`));
    } finally {
      fake.connectedMachines.add(host.machineId);
    }
    assert.equal(fake.opened.filter((o) => o.target.instanceId === waiting).length, 0, 'no stream was asked for an instance not running');
    assert.equal(fake.opened.length, opens + 1, 'one stream asked for: the running instance\'s, whose host is not connected');
    await destroy(id);
  });

  test('a source with too many failed logins is refused until its block ends', async () => {
    const id = await rentOnHost('ssh_proxy');
    fake.trailers = { auth: 'failed', user: 'root' };
    try {
      for (let i = 0; i < FAILED_LOGINS; i++) {
        const r = await ssh(sshd.strangerKey, firstPort(id), 'true');
        assert.equal(r.status, 255);
        assert.match(r.stderr, /Permission denied \(publickey\)/, 'the instance\'s sshd refused the key');
      }
      const opens = fake.opened.length;
      const blocked = await ssh(sshd.key, firstPort(id), 'echo in');
      assert.equal(blocked.status, 255);
      assert.match(blocked.stderr, /gpuplane: too many failed logins from your address: refused for \d+ more seconds/);
      assert.equal(fake.opened.length, opens, 'a blocked source reaches no host');
    } finally {
      fake.trailers = { auth: 'ok', user: 'root' };
    }
    await app().advance(BLOCK_S + 1);
    await reportRunning(); // the host's agent reports again after the long pause
    const again = await ssh(sshd.key, firstPort(id), 'echo in-again');
    assert.equal(again.status, 0, again.stderr);
    assert.equal(again.stdout.trim(), 'in-again');
    await destroy(id);
  });

  test('one source holds at most its cap of connections at once', async () => {
    const id = await rentOnHost('ssh_proxy');
    const held = [];
    for (let i = 0; i < PER_SOURCE; i++) {
      const s = connect(firstPort(id), '127.0.0.1');
      const [hello] = (await once(s, 'data')) as [Buffer];
      assert.match(hello.toString(), /^SSH-2\.0-OpenSSH/, 'passed to the instance\'s sshd');
      held.push(s);
    }
    const over = connect(firstPort(id), '127.0.0.1');
    let got = '';
    over.on('data', (d: Buffer) => (got += d.toString()));
    await once(over, 'close');
    assert.equal(got, '', 'closed at once, without a word');
    for (const s of held) s.destroy();
    await until(() => fake.streams.size === 0);
    const r = await ssh(sshd.key, firstPort(id), 'echo after');
    assert.equal(r.status, 0, r.stderr);
    await destroy(id);
  });

  test('a destroyed instance\'s session ends and its ports close; a new instance\'s open as it appears', async () => {
    const id = await rentOnHost('ssh_proxy');
    const session = await openSession(sshd.key, firstPort(id));
    await destroy(id);
    // The gateway follows on its own (no sync here): the listener closes and the session is cut.
    const code = await session.exit;
    assert.equal(code, 255, session.stderr());
    await until(() => !app().services.gateway.listening().has(firstPort(id)));
    await until(() => fake.streams.size === 0);

    const { id: next } = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox', runtype: 'ssh_proxy' }, renter.api_key);
    await until(() => app().services.gateway.listening().has(firstPort(next)));
    await destroy(next);
    await until(() => !app().services.gateway.listening().has(firstPort(next)));
  });

  // Last: the simulated instance's boot moves the virtual clock (past the real host's liveness timeout).
  test('an instance on a simulated machine is refused as SSH: there is no container to reach', async () => {
    const opens = fake.opened.length;
    const m = await addMachine(app());
    const sim = (await rentOk(app(), offerFor(m, 1), { image: 'busybox', runtype: 'ssh_proxy' }, renter.api_key)).id;
    await untilRunning(app(), sim, renter.api_key);
    await app().services.gateway.sync();
    const inst = await statusOf(app(), sim, renter.api_key);
    assert.equal(inst.ssh_host, GATEWAY_HOST);
    assert.equal(inst.ssh_port, firstPort(sim));
    const s = await ssh(sshd.key, inst.ssh_port, 'true');
    assert.equal(s.status, 255);
    assert.match(s.stderr, new RegExp(`gpuplane: instance ${sim} is on a simulated machine: there is no container to reach`));
    assert.match(s.stderr, /Received disconnect from 127\.0\.0\.1 port \d+:7: instance \d+ is on a simulated machine/, 'the disconnect carries the reason');
    assert.equal(fake.opened.length, opens, 'no stream is asked for');
    const [e] = await sessionsOf(app(), sim);
    assert.equal(e?.args.params.outcome, 'refused');
    assert.match(e.args.params.reason, /simulated machine/);
    await destroy(sim);
  });
}, {
  config: {
    GPUPLANE_GATEWAY_PORTS: range.env,
    GPUPLANE_GATEWAY_HOST: GATEWAY_HOST,
    GPUPLANE_GATEWAY_BIND: '127.0.0.1',
    GPUPLANE_GATEWAY_FAILED_LOGINS: String(FAILED_LOGINS),
    GPUPLANE_GATEWAY_BLOCK_SECONDS: String(BLOCK_S),
    GPUPLANE_GATEWAY_CONNECTIONS_PER_SOURCE: String(PER_SOURCE),
  },
});
