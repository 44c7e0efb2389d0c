// Issue 33 (telemetry): the server end to end through the agent protocol, on SQLite and PostgreSQL. A host's agent
// (its HTTP calls, as src/agent/agent.ts makes them) posts heartbeats carrying GPU samples built by the agent's own
// parser from the captured nvidia-smi and dmesg outputs; the renter sees their GPUs in the instance, the host every
// GPU in `show machine`; a lost GPU, an NVML failure and a critical Xid take the machine out of search with the reason
// in the renter's status_msg, an audit entry and a health event for the host, and a healthy sample brings it back with
// reliability2 measured.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { desired, hostWithMachine, observed, report, type Host } from './agent-server-fixtures.js';
import { rentOk, statusOf } from './instances-fixtures.js';
import { parseTelemetry, parseXids, samplesWithHealth } from '../src/agent/gpu-telemetry.js';
import type { GpuTelemetryT } from '../src/protocol/agent-protocol-schemas.js';
import { FAULT_MIN_DOWN_S, RELIABILITY_MIN_WINDOW_S } from '../src/agent-server/agent-server-health.js';

const FIX = join(import.meta.dirname, 'fixtures', 'nvidia-smi', 'telemetry');
const fixture = (name: string) => readFileSync(join(FIX, name), 'utf8');
/** The first two A100s of the captures (the test machine has two GPUs). */
const BUSES = new Map([[0, '0000:07:00'], [1, '0000:0f:00']]);

/** What the agent's sampler sends for `smi` (and the kernel log `dmesg`), for GPUs 0 and 1. */
function sample(smi: string, code: number, dmesg = 'dmesg-clean.txt'): GpuTelemetryT {
  const reading = parseTelemetry(fixture(smi), code);
  const xids = parseXids(fixture(dmesg)).map((x) => ({ ...x, bus: x.bus === '0000:47:00' ? '0000:0f:00' : x.bus }));
  return { nvml_error: reading.nvmlError, gpus: samplesWithHealth([0, 1], reading, BUSES, xids) };
}
const HEALTHY = () => sample('normal-a100-4x.txt', 0);
/** GPU 1 lost: the capture's lost GPU is bus 47, which this machine has as its GPU 1. */
const LOST = (): GpuTelemetryT => {
  const t = sample('lost-gpu-a100-4x.txt', 15);
  const r = parseTelemetry(fixture('lost-gpu-a100-4x.txt').replace('0000:47:00.0', '0000:0F:00.0').replace(/^1, 00000000:0F.*\n/m, ''), 15);
  return { ...t, gpus: samplesWithHealth([0, 1], r, BUSES, []) };
};

async function search(app: TestApp, machineId: number): Promise<any[]> {
  const r = await app.request('POST', '/api/v0/bundles/', { body: { machine_id: { eq: machineId }, verified: { eq: false }, rentable: { eq: true } } });
  assert.equal(r.status, 200, r.raw);
  return r.body.offers;
}

async function showMachine(app: TestApp, host: Host): Promise<any> {
  const r = await app.request('GET', `/api/v0/machines/${host.machineId}`, { key: host.apiKey });
  assert.equal(r.status, 200, r.raw);
  return r.body[0];
}

/** The host's audit entries of this action (written after the report commits: read until there, up to 2 s). */
async function auditOf(app: TestApp, host: Host, action: string): Promise<any[]> {
  for (let i = 0; i < 40; i++) {
    const r = await app.request('GET', '/api/v0/audit_logs/', { key: host.apiKey });
    const found = (r.body as any[]).filter((e) => e.action === action);
    if (found.length) return found;
    await new Promise((res) => setTimeout(res, 50));
  }
  return [];
}

forEachDialect('GPU health through the agent protocol', (app) => {
  test('a running instance shows its own GPUs; the host sees every GPU; an idle machine\'s sample takes the one-statement path', async () => {
    const host = await hostWithMachine(app());
    const renter = await app().createUser();
    const { id } = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox', runtype: 'ssh_proxy' }, renter.api_key);
    const d = await desired(app(), host);
    const gpu = d.instances[0].gpu_indices[0] as number;
    await report(app(), host, [observed(id, d.instances[0].boot)], d.version, { gpu_telemetry: HEALTHY() });
    const inst = await statusOf(app(), id, renter.api_key);
    const mine = HEALTHY().gpus[gpu];
    assert.equal(inst.actual_status, 'running');
    assert.equal(inst.gpu_util, mine.util);
    assert.equal(inst.gpu_temp, mine.temp);
    assert.equal(inst.vmem_usage, Math.round((mine.mem_used! / 1024) * 100) / 100);
    assert.equal(typeof inst.gpu_mem_bw, 'number');
    assert.equal(inst.status_msg, null);
    // The list shows the same.
    const list = await app().request('GET', '/api/v0/instances/', { key: renter.api_key });
    assert.equal(list.body.instances.find((i: any) => i.id === id).gpu_util, mine.util);

    const m = await showMachine(app(), host);
    assert.deepEqual(m.gpus.map((g: any) => [g.index, g.util, g.temp, g.power]), [[0, 97, 64, 331.52], [1, 0, 33, 61.08]]);
    assert.equal(m.gpu_fault, null);
    assert.equal(typeof m.gpu_sampled_at, 'number');
    assert.deepEqual(m.health_events, []);

    // An idle machine: its heartbeat with a healthy sample is stored by the idle path too.
    const idle = await hostWithMachine(app());
    await report(app(), idle, [], null, { gpu_telemetry: sample('normal-a100-4x.txt', 0) });
    assert.deepEqual((await showMachine(app(), idle)).gpus.map((g: any) => g.util), [97, 0]);
    // A heartbeat without a sample keeps the last one.
    await report(app(), idle, [], null);
    assert.deepEqual((await showMachine(app(), idle)).gpus.map((g: any) => g.util), [97, 0]);
  });

  test('a lost GPU: not offered, the renter of that GPU sees why, the host gets an audit entry and an event; a healthy sample brings it back', async () => {
    const host = await hostWithMachine(app());
    assert.ok((await search(app(), host.machineId)).length > 0);
    const renter = await app().createUser();
    const { id } = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox', runtype: 'ssh_proxy' }, renter.api_key);
    const d = await desired(app(), host);
    const gpu = d.instances[0].gpu_indices[0] as number;
    await report(app(), host, [observed(id, d.instances[0].boot)], d.version, { gpu_telemetry: HEALTHY() });
    const before = await app().request('POST', '/api/v0/bundles/', { body: { machine_id: { eq: host.machineId }, verified: { eq: false } } });
    const reliabilityBefore = before.body.offers[0].reliability2;
    assert.equal(reliabilityBefore, 1);

    // The GPU the renter holds is lost (the other is free and would be offered on a healthy machine).
    const lost = LOST();
    const lostGpus = lost.gpus.map((g) => (g.index === gpu ? { ...g, fault: `GPU ${gpu} is lost: GPU is lost. Reboot the system to recover this GPU`, util: null } : { ...g, fault: null }));
    await report(app(), host, [observed(id, d.instances[0].boot)], d.version, { gpu_telemetry: { nvml_error: null, gpus: lostGpus } });
    assert.deepEqual(await search(app(), host.machineId), [], 'a machine with a lost GPU is not offered');
    const inst = await statusOf(app(), id, renter.api_key);
    assert.equal(inst.actual_status, 'running');
    assert.equal(inst.status_msg, `GPU fault on the host: GPU ${gpu} is lost: GPU is lost. Reboot the system to recover this GPU`);
    const m = await showMachine(app(), host);
    assert.match(m.gpu_fault, /is lost/);
    assert.equal(m.online, true);
    assert.equal(m.rentable, false);
    assert.equal(m.health_events.length, 1);
    assert.equal(m.health_events[0].kind, 'gpu');
    assert.equal(m.health_events[0].ended_at, null);
    const faults = await auditOf(app(), host, 'machine.gpu_fault');
    assert.equal(faults.length, 1);
    assert.equal(faults[0].args.params.machine_id, host.machineId);
    assert.match(faults[0].args.params.fault, /is lost/);
    // A renter cannot rent the machine's other GPU meanwhile.
    const other = await app().createUser();
    const refused = await app().request('PUT', `/api/v0/asks/${host.machineId * 100 + 1}/`, { key: other.api_key, body: { image: 'busybox', runtype: 'ssh_proxy' } });
    assert.notEqual(refused.status, 200, refused.raw);

    // Still lost on the next heartbeat: one fault, one entry.
    await report(app(), host, [observed(id, d.instances[0].boot)], d.version, { gpu_telemetry: { nvml_error: null, gpus: lostGpus } });
    assert.equal((await showMachine(app(), host)).health_events.length, 1);

    // The host recovers it (a reboot, a reseat): healthy samples again.
    await app().advance(600);
    await report(app(), host, [observed(id, d.instances[0].boot)], d.version, { gpu_telemetry: HEALTHY() });
    const offers = await search(app(), host.machineId);
    assert.ok(offers.length > 0, 'offered again');
    // Fault lasted 600 s but counts an hour, over the one-day minimum window of a young machine.
    const expected = Math.round((1 - FAULT_MIN_DOWN_S / RELIABILITY_MIN_WINDOW_S) * 1e4) / 1e4;
    assert.equal(offers[0].reliability2, expected);
    const recovered = await statusOf(app(), id, renter.api_key);
    assert.equal(recovered.status_msg, null);
    assert.equal(recovered.reliability2, expected, 'the instance shows its machine\'s reliability2 as measured now');
    const after = await showMachine(app(), host);
    assert.equal(after.gpu_fault, null);
    assert.equal(after.reliability2, expected);
    assert.equal(after.health_events[0].ended_at - after.health_events[0].started_at, 600);
    assert.equal((await auditOf(app(), host, 'machine.gpu_recovered')).length, 1);
  });

  test('an NVML failure on an idle machine leaves the one-statement path and takes the machine out; recovery restores it', async () => {
    const host = await hostWithMachine(app());
    await report(app(), host, [], null, { gpu_telemetry: HEALTHY() });
    assert.ok((await search(app(), host.machineId)).length > 0);
    const nvml = sample('nvml-mismatch.txt', 18);
    await report(app(), host, [], null, { gpu_telemetry: nvml });
    assert.deepEqual(await search(app(), host.machineId), []);
    const m = await showMachine(app(), host);
    assert.equal(m.gpu_fault, 'NVML failed: Failed to initialize NVML: Driver/library version mismatch');
    assert.deepEqual(m.gpus.map((g: any) => g.fault), ['Failed to initialize NVML: Driver/library version mismatch', 'Failed to initialize NVML: Driver/library version mismatch']);
    // A heartbeat without a sample changes nothing; a healthy one (idle machine, faulted: the full path) lifts it.
    await report(app(), host, [], null);
    assert.deepEqual(await search(app(), host.machineId), []);
    await report(app(), host, [], null, { gpu_telemetry: HEALTHY() });
    assert.ok((await search(app(), host.machineId)).length > 0);
  });

  test('a critical Xid (79 fallen off the bus) faults its GPU; a renter of the other GPU sees nothing wrong', async () => {
    const host = await hostWithMachine(app());
    const renter = await app().createUser();
    const { id } = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox', runtype: 'ssh_proxy' }, renter.api_key);
    const d = await desired(app(), host);
    const gpu = d.instances[0].gpu_indices[0] as number;
    const xid = sample('normal-a100-4x.txt', 0, 'dmesg-xid.txt');
    // dmesg-xid.txt's Xid 79 is on the bus this machine has as GPU 1.
    assert.equal(xid.gpus[1].fault, 'Xid 79: GPU has fallen off the bus');
    assert.equal(xid.gpus[0].fault, null);
    await report(app(), host, [observed(id, d.instances[0].boot)], d.version, { gpu_telemetry: xid });
    assert.deepEqual(await search(app(), host.machineId), []);
    const inst = await statusOf(app(), id, renter.api_key);
    if (gpu === 1) assert.equal(inst.status_msg, 'GPU fault on the host: Xid 79: GPU has fallen off the bus');
    else assert.equal(inst.status_msg, null, 'the renter of the healthy GPU is not told of the other one');
    assert.equal((await showMachine(app(), host)).gpu_fault, 'GPU 1: Xid 79: GPU has fallen off the bus');
  });

  test('a malformed sample is a 400 naming the field, never a 500', async () => {
    const host = await hostWithMachine(app());
    const bad = { nvml_error: null, gpus: [{ ...HEALTHY().gpus[0], util: 250 }] };
    const r = await app().request('PUT', '/api/v0/agent/status/', { key: host.machineKey, body: { agent_version: '1', desired_version: null, observed: [], gpu_telemetry: bad } });
    assert.equal(r.status, 400, r.raw);
    assert.equal(r.body.success, false);
    assert.match(r.body.msg, /gpu_telemetry/);
    const extra = await app().request('PUT', '/api/v0/agent/status/', { key: host.machineKey, body: { agent_version: '1', desired_version: null, observed: [], gpu_telemetry: { gpus: [] } } });
    assert.equal(extra.status, 400, extra.raw);
  });
});

// The window rolls: reliability2 is recomputed every hour for machines with down periods in it, so a fault's cost
// shrinks as the machine ages, and is gone once the fault left the 30-day window. (A liveness timeout of a day
// keeps the test agent, which reports once a day, online.)
forEachDialect('reliability2 as the window rolls', (app) => {
  test('a fault\'s cost shrinks as the machine ages and is gone after 30 days', async () => {
    const host = await hostWithMachine(app());
    await report(app(), host, [], null, { gpu_telemetry: HEALTHY() });
    await report(app(), host, [], null, { gpu_telemetry: sample('nvml-mismatch.txt', 18) });
    await app().advance(600);
    await report(app(), host, [], null, { gpu_telemetry: HEALTHY() });
    const r0 = (await showMachine(app(), host)).reliability2;
    assert.equal(r0, Math.round((1 - FAULT_MIN_DOWN_S / RELIABILITY_MIN_WINDOW_S) * 1e4) / 1e4);
    // Days pass with a heartbeat each (the liveness timeout is a day here): the machine stays online.
    const days = async (n: number) => {
      for (let i = 0; i < n; i++) {
        await app().advance(86_340);
        await report(app(), host, [], null, { gpu_telemetry: HEALTHY() });
      }
    };
    await days(3);
    const r3 = (await showMachine(app(), host)).reliability2;
    assert.ok(r3 > r0 && r3 < 1, `after 3 days ${r3} is between ${r0} and 1`);
    assert.ok(Math.abs(r3 - (1 - FAULT_MIN_DOWN_S / (3 * 86_340))) < 0.002, `after 3 days ${r3} is about 1 - 1 h / 3 days`);
    await days(28); // 31 such days: past 30 days and the refresh's margin
    assert.equal((await showMachine(app(), host)).reliability2, 1);
    assert.deepEqual((await showMachine(app(), host)).health_events.map((e: any) => e.kind), ['gpu'], 'no silence was counted');
  });
}, { config: { GPUPLANE_AGENT_OFFLINE_AFTER: '86400' } });
