// The reconcile loop, level-triggered: the pure decisions (plan, observe) case by case, then the loop over an
// in-memory runtime: converge, restart without duplicates, orphans, exits and boots, stop/start, recreate, failures.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { observe, plan, type Failure, type InstanceActivity, type InstanceRecord } from '../src/agent/reconcile-plan.js';
import { createReconciler } from '../src/agent/reconciler.js';
import { silentLog } from '../src/agent/agent-log.js';
import type { RuntimeContainer } from '../src/agent/runtime.js';
import type { DesiredInstanceT, ObservedInstanceT } from '../src/protocol/agent-protocol-schemas.js';
import { desiredInstance } from './agent-fake-server.js';
import { FAKE_OWNER, fakeRuntime, type FakeRuntime } from './agent-fake-runtime.js';

const NOW = 1_800_000_000;
const BOOTED = NOW - 3600;

function container(over: Partial<RuntimeContainer> & { id: string }): RuntimeContainer {
  return { name: over.id, instanceId: 1, generation: 1, status: 'running', exitCode: null, finishedAt: null, boundHostPorts: [], ports: {}, ...over };
}

function planFor(o: {
  desired: DesiredInstanceT[];
  containers: RuntimeContainer[];
  records?: [number, InstanceRecord][];
  failures?: [number, Failure][];
  busy?: number[];
}) {
  return plan({
    desired: o.desired, containers: o.containers, records: new Map(o.records ?? []), failures: new Map(o.failures ?? []),
    busy: new Set(o.busy ?? []), now: NOW, hostBootTime: BOOTED,
  }).map((a) => {
    const { instance, ...rest } = a as typeof a & { instance?: DesiredInstanceT };
    return instance ? { ...rest, instanceId: instance.instance_id } : rest;
  });
}

const rec = (generation: number, boot: number, stopped = false): InstanceRecord => ({ generation, boot, stopped });

describe('plan', () => {
  const d1 = desiredInstance({ instance_id: 1 });

  test('nothing there: create; there and as desired: nothing', () => {
    assert.deepEqual(planFor({ desired: [d1], containers: [] }), [{ kind: 'create', instanceId: 1 }]);
    assert.deepEqual(planFor({ desired: [d1], containers: [container({ id: 'a' })], records: [[1, rec(1, 0)]] }), []);
  });

  test('another generation: recreate', () => {
    assert.deepEqual(planFor({ desired: [{ ...d1, generation: 2 }], containers: [container({ id: 'a' })], records: [[1, rec(1, 0)]] }), [
      { kind: 'recreate', instanceId: 1, containerId: 'a' },
    ]);
  });

  test('not desired, or naming no instance: removed as orphans; nothing desired removes everything', () => {
    const cs = [container({ id: 'a', instanceId: 5 }), container({ id: 'b', instanceId: null })];
    assert.deepEqual(planFor({ desired: [], containers: cs }), [
      { kind: 'remove', instanceId: 5, containerId: 'a', reason: 'orphan' },
      { kind: 'remove', instanceId: null, containerId: 'b', reason: 'orphan' },
    ]);
  });

  test('two containers for one instance: the current running one stays, the other goes', () => {
    const cs = [container({ id: 'old', generation: 0, status: 'exited' }), container({ id: 'cur' })];
    assert.deepEqual(planFor({ desired: [d1], containers: cs, records: [[1, rec(1, 0)]] }), [
      { kind: 'remove', instanceId: 1, containerId: 'old', reason: 'duplicate' },
    ]);
  });

  test('running but stopped wanted: stop; running and a new boot: restart', () => {
    const c = container({ id: 'a' });
    assert.deepEqual(planFor({ desired: [{ ...d1, state: 'stopped' }], containers: [c], records: [[1, rec(1, 0)]] }), [{ kind: 'stop', instanceId: 1, containerId: 'a' }]);
    assert.deepEqual(planFor({ desired: [{ ...d1, boot: 1 }], containers: [c], records: [[1, rec(1, 0)]] }), [{ kind: 'restart', instanceId: 1, containerId: 'a' }]);
  });

  test('exited by itself stays exited until a new boot', () => {
    const c = container({ id: 'a', status: 'exited', exitCode: 3, finishedAt: NOW - 10 });
    assert.deepEqual(planFor({ desired: [d1], containers: [c], records: [[1, rec(1, 0)]] }), []);
    assert.deepEqual(planFor({ desired: [{ ...d1, boot: 1 }], containers: [c], records: [[1, rec(1, 0)]] }), [{ kind: 'start', instanceId: 1, containerId: 'a' }]);
  });

  test('stopped by the agent: running wanted again starts it, whatever boot says', () => {
    const c = container({ id: 'a', status: 'exited', exitCode: 0, finishedAt: NOW - 10 });
    assert.deepEqual(planFor({ desired: [d1], containers: [c], records: [[1, rec(1, 0, true)]] }), [{ kind: 'start', instanceId: 1, containerId: 'a' }]);
    assert.deepEqual(planFor({ desired: [{ ...d1, state: 'stopped' }], containers: [c], records: [[1, rec(1, 0, true)]] }), []);
  });

  test('stopped before the host booted (a reboot, not the renter\'s exit): started again', () => {
    const c = container({ id: 'a', status: 'exited', exitCode: 137, finishedAt: BOOTED - 5 });
    assert.deepEqual(planFor({ desired: [d1], containers: [c], records: [[1, rec(1, 0)]] }), [{ kind: 'start', instanceId: 1, containerId: 'a' }]);
  });

  test('created and never started: start it when running is wanted', () => {
    const c = container({ id: 'a', status: 'created' });
    assert.deepEqual(planFor({ desired: [d1], containers: [c], records: [[1, rec(1, 0)]] }), [{ kind: 'start', instanceId: 1, containerId: 'a' }]);
    assert.deepEqual(planFor({ desired: [{ ...d1, state: 'stopped' }], containers: [c], records: [[1, rec(1, 0)]] }), []);
  });

  test('nothing remembered: the container is adopted as it is, without a restart nobody asked for', () => {
    const c = container({ id: 'a' });
    assert.deepEqual(planFor({ desired: [{ ...d1, boot: 7 }], containers: [c] }), [{ kind: 'adopt', instanceId: 1, record: rec(1, 7) }]);
    const exited = container({ id: 'a', status: 'exited', exitCode: 1, finishedAt: NOW - 1 });
    assert.deepEqual(planFor({ desired: [{ ...d1, boot: 7 }], containers: [exited] }), [{ kind: 'adopt', instanceId: 1, record: rec(1, 7) }]);
  });

  test('an instance with an action in flight is left alone', () => {
    assert.deepEqual(planFor({ desired: [d1], containers: [], busy: [1] }), []);
    assert.deepEqual(planFor({ desired: [], containers: [container({ id: 'a' })], busy: [1] }), []);
  });

  test('a failure waits for its retry time, unless the generation changed', () => {
    const f = (retryAt: number): [number, Failure][] => [[1, { generation: 1, error: 'pull failed', attempts: 1, retryAt }]];
    assert.deepEqual(planFor({ desired: [d1], containers: [], failures: f(NOW + 5) }), []);
    assert.deepEqual(planFor({ desired: [d1], containers: [], failures: f(NOW) }), [{ kind: 'create', instanceId: 1 }]);
    assert.deepEqual(planFor({ desired: [{ ...d1, generation: 2 }], containers: [], failures: f(NOW + 5) }), [{ kind: 'create', instanceId: 1 }]);
  });

  test('a generation bump (recycle, update): recreate, also while stopped; a failed recreate waits for its retry time', () => {
    const c = container({ id: 'a' });
    const d2 = { ...d1, generation: 2, boot: 1, repull: true };
    assert.deepEqual(planFor({ desired: [d2], containers: [c], records: [[1, rec(1, 0)]] }), [{ kind: 'recreate', instanceId: 1, containerId: 'a' }]);
    const stopped = container({ id: 'a', status: 'exited', exitCode: 0, finishedAt: NOW - 10 });
    assert.deepEqual(planFor({ desired: [{ ...d2, state: 'stopped' }], containers: [stopped], records: [[1, rec(1, 0, true)]] }), [
      { kind: 'recreate', instanceId: 1, containerId: 'a' },
    ]);
    const failed = (retryAt: number, generation = 2): [number, Failure][] => [[1, { generation, error: 'pull failed', attempts: 1, retryAt }]];
    assert.deepEqual(planFor({ desired: [d2], containers: [c], failures: failed(NOW + 5) }), []);
    assert.deepEqual(planFor({ desired: [d2], containers: [c], failures: failed(NOW) }), [{ kind: 'recreate', instanceId: 1, containerId: 'a' }]);
    assert.deepEqual(planFor({ desired: [{ ...d2, generation: 3 }], containers: [c], failures: failed(NOW + 5) }), [
      { kind: 'recreate', instanceId: 1, containerId: 'a' },
    ], 'another generation is not held back by the last one\'s failure');
  });

  test('a boot bump on the running container (reboot): restart, not recreate', () => {
    assert.deepEqual(planFor({ desired: [{ ...d1, boot: 1 }], containers: [container({ id: 'a' })], records: [[1, rec(1, 0)]] }), [
      { kind: 'restart', instanceId: 1, containerId: 'a' },
    ]);
  });

  test('a container being removed is neither acted on nor replaced yet', () => {
    assert.deepEqual(planFor({ desired: [d1], containers: [container({ id: 'a', status: 'removing' })] }), []);
  });
});

describe('observe', () => {
  const d = (over: Partial<DesiredInstanceT> = {}) => desiredInstance({ instance_id: 1, boot: 2, ...over });
  const none = (): InstanceActivity => ({ pulling: false, failure: undefined });
  const one = (desired: DesiredInstanceT, c: RuntimeContainer | null, activity: () => InstanceActivity = none) =>
    observe([desired], c ? [c] : [], new Map([[1, rec(1, 2)]]), activity);

  test('running: the real ports; exited: the exit code; stopped as desired', () => {
    const ports = { '22/tcp': [{ HostIp: '127.0.0.1', HostPort: '40001' }] };
    assert.deepEqual(one(d(), container({ id: 'a', ports })), [
      { instance_id: 1, generation: 1, boot: 2, state: 'running', container_id: 'a', exit_code: null, ports, error: null },
    ]);
    assert.equal(one(d(), container({ id: 'a', status: 'exited', exitCode: 3 }))[0].state, 'exited');
    assert.equal(one(d(), container({ id: 'a', status: 'exited', exitCode: 3 }))[0].exit_code, 3);
    assert.equal(one(d({ state: 'stopped' }), container({ id: 'a', status: 'exited', exitCode: 0 }))[0].state, 'stopped');
    assert.equal(one(d(), container({ id: 'a', status: 'created' }))[0].state, 'created');
  });

  test('no container: pulling while the image comes, failed with the reason, else no entry', () => {
    assert.equal(one(d(), null, () => ({ pulling: true, failure: undefined }))[0].state, 'pulling');
    const failed = one(d(), null, () => ({ pulling: false, failure: { generation: 1, error: 'pull of x failed: denied', attempts: 2, retryAt: 0 } }));
    assert.deepEqual([failed[0].state, failed[0].error, failed[0].container_id], ['failed', 'pull of x failed: denied', null]);
    assert.deepEqual(one(d(), null), []);
  });
});

/** The reconcile loop over a fake runtime, with a clock the test moves. */
function harness(fake: FakeRuntime = fakeRuntime(), records = new Map<number, InstanceRecord>()) {
  const clock = { now: NOW };
  const reports: ObservedInstanceT[][] = [];
  const saved: Map<number, InstanceRecord>[] = [];
  const r = createReconciler({
    runtime: fake.runtime,
    limits: { machineId: 42, owner: FAKE_OWNER, cpuCores: 16, ramMb: 65536, gpuDevices: true },
    publishIp: '127.0.0.1',
    portRange: { start: 41000, end: 41009 },
    records,
    saveRecords: (m) => saved.push(new Map(m)),
    now: () => clock.now,
    hostBootTime: BOOTED,
    isPortFree: async () => true,
    stopTimeoutS: 1,
    log: silentLog,
    onObserved: (o) => reports.push(o),
  });
  const converge = async (desired: DesiredInstanceT[]) => {
    r.setDesired(desired);
    await r.idle();
  };
  const state = () => r.observed()!.map((o) => [o.instance_id, o.state]);
  return { fake, r, clock, reports, saved, records, converge, state };
}

describe('reconcile loop', () => {
  test('converges: pulls, creates with ports from the range, starts; records what it did', async () => {
    const h = harness();
    await h.converge([desiredInstance({ instance_id: 1, ports: ['22/tcp'] }), desiredInstance({ instance_id: 2, ports: ['22/tcp', '8080/tcp'], state: 'stopped' })]);
    assert.deepEqual(h.state(), [[1, 'running'], [2, 'stopped']]);
    const [c1] = h.fake.byInstance(1);
    const [c2] = h.fake.byInstance(2);
    const ports = [...c1.boundHostPorts, ...c2.boundHostPorts].sort();
    assert.equal(new Set(ports).size, 3, 'no host port shared');
    assert.ok(ports.every((p) => p >= 41000 && p <= 41009));
    assert.deepEqual(h.r.observed()![0].ports, { '22/tcp': [{ HostIp: '127.0.0.1', HostPort: String(c1.boundHostPorts[0]) }] });
    assert.equal(c2.status, 'created');
    assert.deepEqual(h.records.get(1), { generation: 1, boot: 0, stopped: false });
    assert.deepEqual(h.records.get(2), { generation: 1, boot: 0, stopped: true });
    assert.deepEqual(h.reports.at(-1), h.r.observed());
  });

  test('many triggers while a pull is slow still make one container', async () => {
    const h = harness();
    const release = h.fake.holdPull('slow:1');
    h.r.setDesired([desiredInstance({ instance_id: 1, image: 'slow:1' })]);
    for (let i = 0; i < 20; i++) h.r.trigger();
    await new Promise<void>((resolve) => setImmediate(resolve));
    assert.deepEqual(h.state(), [[1, 'pulling']]);
    release();
    await h.r.idle();
    assert.equal(h.fake.byInstance(1).length, 1);
    assert.equal(h.fake.calls.filter((c) => c.startsWith('create')).length, 1);
  });

  test('a new reconciler over the same containers and records (an agent restart): no duplicate, no restart', async () => {
    const fake = fakeRuntime();
    const first = harness(fake);
    await first.converge([desiredInstance({ instance_id: 1 }), desiredInstance({ instance_id: 2 })]);
    await first.r.close();
    const callsBefore = fake.calls.length;
    const second = harness(fake, new Map(first.records));
    await second.converge([desiredInstance({ instance_id: 1 }), desiredInstance({ instance_id: 2 })]);
    assert.deepEqual(fake.calls.slice(callsBefore).filter((c) => !c.startsWith('list')), []);
    assert.equal(fake.containers.size, 2);
  });

  test('orphans of this machine are removed (with their records); other machines\' containers are not seen', async () => {
    const h = harness();
    await h.converge([desiredInstance({ instance_id: 1 }), desiredInstance({ instance_id: 2 })]);
    const other = h.fake.addContainer(99, 2, 1);
    const stray = h.fake.addContainer(42, null, 1);
    await h.converge([desiredInstance({ instance_id: 1 })]);
    assert.equal(h.fake.byInstance(2).filter((c) => c.machineId === 42).length, 0);
    assert.ok(h.fake.containers.has(other));
    assert.equal(h.fake.containers.has(stray), false);
    assert.equal(h.records.has(2), false);
    assert.deepEqual(h.state(), [[1, 'running']]);
  });

  test('issue 29 item 6: containers of the same machine id made by another owner, or by none, are never touched', async () => {
    const h = harness();
    await h.converge([desiredInstance({ instance_id: 1 })]);
    // Another control plane's agent on this daemon: its machine is numbered 42 too, and runs instance 1 and 2.
    const theirs = [h.fake.addContainer(42, 1, 1, 'running', '0123456789abcdef'), h.fake.addContainer(42, 2, 1, 'running', '0123456789abcdef')];
    // An agent from before owner labels (an upgrade): machine 42's label only.
    const legacy = h.fake.addContainer(42, 3, 1, 'running', null);
    await h.converge([desiredInstance({ instance_id: 1 })]);
    await h.converge([]);
    for (const id of [...theirs, legacy]) assert.ok(h.fake.containers.has(id), `${id} left alone`);
    assert.deepEqual([...h.fake.containers.values()].filter((c) => c.owner === FAKE_OWNER), [], 'ours removed');
    const touched = h.fake.calls.filter((c) => [...theirs, legacy].some((id) => c.includes(id)));
    assert.deepEqual(touched, []);
  });

  test('issue 29 item 13: each instance gets its own network, removed with it (and a leftover one at the next pass)', async () => {
    const h = harness();
    await h.converge([desiredInstance({ instance_id: 1 }), desiredInstance({ instance_id: 2 })]);
    const names = () => [...h.fake.networks.values()].map((n) => n.name).sort();
    assert.deepEqual(names(), [`gpuplane-42-1-${FAKE_OWNER}`, `gpuplane-42-2-${FAKE_OWNER}`]);
    assert.deepEqual(h.fake.byInstance(1).map((c) => c.spec.network.name), [`gpuplane-42-1-${FAKE_OWNER}`]);
    await h.converge([desiredInstance({ instance_id: 1 })]);
    assert.deepEqual(names(), [`gpuplane-42-1-${FAKE_OWNER}`], 'the destroyed instance\'s network went with it');
    // A network left by a crash between its create and its container's, of an instance no longer desired.
    h.fake.networks.set('n-left', { id: 'n-left', name: 'gpuplane-42-9-x', bridge: 'gpbx', labels: { 'gpuplane.machine_id': '42', 'gpuplane.owner': FAKE_OWNER, 'gpuplane.instance_id': '9' } });
    // Another owner's network of the same machine id: not ours.
    h.fake.networks.set('n-theirs', { id: 'n-theirs', name: 'theirs', bridge: 'gpby', labels: { 'gpuplane.machine_id': '42', 'gpuplane.owner': 'other', 'gpuplane.instance_id': '9' } });
    h.r.trigger();
    await h.r.idle();
    assert.deepEqual(names(), [`gpuplane-42-1-${FAKE_OWNER}`, 'theirs']);
  });

  test('an exit is reported with its code and left alone; a new boot starts it again', async () => {
    const h = harness();
    const d = desiredInstance({ instance_id: 1 });
    await h.converge([d]);
    const [c] = h.fake.byInstance(1);
    h.fake.exit(c.id, 3);
    h.r.trigger();
    await h.r.idle();
    assert.deepEqual(h.r.observed()!.map((o) => [o.state, o.exit_code]), [['exited', 3]]);
    assert.equal(h.fake.calls.filter((x) => x.startsWith('start')).length, 1);
    await h.converge([{ ...d, boot: 1 }]);
    assert.deepEqual(h.r.observed()!.map((o) => [o.state, o.boot, o.container_id]), [['running', 1, c.id]]);
  });

  test('stop keeps the container; running again starts the same one', async () => {
    const h = harness();
    const d = desiredInstance({ instance_id: 1 });
    await h.converge([d]);
    const [c] = h.fake.byInstance(1);
    await h.converge([{ ...d, state: 'stopped' }]);
    assert.deepEqual(h.state(), [[1, 'stopped']]);
    assert.equal(h.fake.containers.get(c.id)!.status, 'exited');
    await h.converge([d]);
    assert.deepEqual(h.state(), [[1, 'running']]);
    assert.deepEqual(h.fake.byInstance(1).map((x) => x.id), [c.id]);
  });

  test('a new generation replaces the container: the new image first, then the old one goes', async () => {
    const h = harness();
    await h.converge([desiredInstance({ instance_id: 1 })]);
    const [old] = h.fake.byInstance(1);
    await h.converge([desiredInstance({ instance_id: 1, generation: 2, image: 'busybox:2' })]);
    const now = h.fake.byInstance(1);
    assert.equal(now.length, 1);
    assert.notEqual(now[0].id, old.id);
    assert.equal(now[0].spec.image, 'busybox:2');
    assert.equal(now[0].generation, 2);
    const calls = h.fake.calls.filter((c) => !c.startsWith('list'));
    assert.ok(calls.indexOf('pull busybox:2') < calls.indexOf(`remove ${old.id}`));
  });

  test('recycle (repull): the image is pulled afresh though the host has it, once; the new container runs with the new boot', async () => {
    const h = harness();
    const d = desiredInstance({ instance_id: 1 });
    await h.converge([d]);
    const [old] = h.fake.byInstance(1);
    await h.converge([{ ...d, generation: 2, boot: 1, repull: true }]);
    const calls = h.fake.calls.filter((c) => !c.startsWith('list'));
    assert.equal(calls.filter((c) => c === 'pull busybox:latest (fresh)').length, 1, calls.join(', '));
    assert.ok(calls.indexOf('pull busybox:latest (fresh)') < calls.indexOf(`remove ${old.id}`));
    const [now] = h.fake.byInstance(1);
    assert.equal(now.generation, 2);
    assert.deepEqual(h.r.observed()!.map((o) => [o.state, o.generation, o.boot]), [['running', 2, 1]]);
    assert.deepEqual(h.records.get(1), { generation: 2, boot: 1, stopped: false });
  });

  test('reboot (a new boot): the same container is stopped and started again', async () => {
    const h = harness();
    const d = desiredInstance({ instance_id: 1 });
    await h.converge([d]);
    const [c] = h.fake.byInstance(1);
    await h.converge([{ ...d, boot: 1 }]);
    const calls = h.fake.calls.filter((x) => !x.startsWith('list'));
    assert.deepEqual(calls.slice(-2), [`stop ${c.id}`, `start ${c.id}`]);
    assert.deepEqual(h.r.observed()!.map((o) => [o.state, o.boot, o.container_id]), [['running', 1, c.id]]);
  });

  test('a recreate whose pull fails stops the old container (its compute is no longer billed) and reports failed', async () => {
    const h = harness();
    const d = desiredInstance({ instance_id: 1 });
    await h.converge([d]);
    const [old] = h.fake.byInstance(1);
    h.fake.failPull.set('busybox:9', 'pull of busybox:9 failed: manifest unknown');
    await h.converge([{ ...d, generation: 2, boot: 1, image: 'busybox:9' }]);
    assert.equal(h.fake.containers.get(old.id)!.status, 'exited');
    assert.deepEqual(h.r.observed()!.map((o) => [o.state, o.generation, o.error]), [['failed', 2, 'pull of busybox:9 failed: manifest unknown']]);
    const pulls = () => h.fake.calls.filter((c) => c === 'pull busybox:9').length;
    h.r.trigger();
    await h.r.idle();
    assert.equal(pulls(), 1, 'not again before the retry time');
  });

  test('a failed pull is reported as failed with the reason, retried after the delay and at once on a change', async () => {
    const h = harness();
    h.fake.failPull.set('private/img:1', 'pull of private/img:1 failed: unauthorized');
    const d = desiredInstance({ instance_id: 1, image: 'private/img:1' });
    await h.converge([d]);
    assert.deepEqual(h.r.observed()!.map((o) => [o.state, o.error]), [['failed', 'pull of private/img:1 failed: unauthorized']]);
    const pulls = () => h.fake.calls.filter((c) => c === 'pull private/img:1').length;
    h.r.trigger();
    await h.r.idle();
    assert.equal(pulls(), 1, 'not before the retry time');
    h.clock.now += 5;
    h.r.trigger();
    await h.r.idle();
    assert.equal(pulls(), 2);
    h.fake.failPull.delete('private/img:1');
    await h.converge([{ ...d }]);
    assert.deepEqual(h.state(), [[1, 'running']]);
  });

  test('nothing is removed before the first desired state', async () => {
    const h = harness();
    h.fake.addContainer(42, 7, 1);
    h.r.trigger();
    await h.r.idle();
    assert.equal(h.fake.containers.size, 1);
    assert.equal(h.r.observed(), null);
  });
});
