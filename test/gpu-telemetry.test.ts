// Issue 33 (telemetry): the agent's reading of nvidia-smi's telemetry query and the kernel's Xid lines, from the
// outputs in test/fixtures/nvidia-smi/telemetry/ (normal, no ECC, a lost GPU, an NVML failure, critical Xids); the
// sampler over a real nvidia-smi stand-in run by the agent's own program runner; and reliability2's arithmetic.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Value } from 'typebox/value';
import { busKey, parseTelemetry, parseXids, samplesWithHealth, telemetryArgs, TELEMETRY_FIELDS } from '../src/agent/gpu-telemetry.js';
import { gpuSampler, XID_HOLD_S } from '../src/agent/gpu-sampler.js';
import { programRunner, type Exec } from '../src/agent/hardware.js';
import { GpuTelemetry, StatusBody } from '../src/protocol/agent-protocol-schemas.js';
import { faultOf, reliabilityOf, FAULT_MIN_DOWN_S, RELIABILITY_WINDOW_S } from '../src/agent-server/agent-server-health.js';

const FIX = join(import.meta.dirname, 'fixtures', 'nvidia-smi', 'telemetry');
const fixture = (name: string) => readFileSync(join(FIX, name), 'utf8');
const A100_BUSES = new Map([[0, '0000:07:00'], [1, '0000:0f:00'], [2, '0000:47:00'], [3, '0000:4e:00']]);

test('the query asks for the fields parsed, in CSV without header or units', () => {
  assert.deepEqual(telemetryArgs(), [`--query-gpu=${TELEMETRY_FIELDS.join(',')}`, '--format=csv,noheader,nounits']);
  assert.equal(busKey('00000000:3B:00.0'), '0000:3b:00');
  assert.equal(busKey('PCI:0000:3b:00'), '0000:3b:00');
  assert.equal(busKey('0000:3B:00.0'), '0000:3b:00');
  assert.equal(busKey('nonsense'), null);
});

test('normal: four A100s, each with its load, memory, temperature, power and ECC count', () => {
  const r = parseTelemetry(fixture('normal-a100-4x.txt'), 0);
  assert.equal(r.nvmlError, null);
  assert.deepEqual(r.lost, []);
  assert.equal(r.samples.length, 4);
  assert.deepEqual(r.samples[0], { index: 0, bus: '0000:07:00', util: 97, mem_util: 61, mem_used: 71234, mem_total: 81920, temp: 64, power: 331.52, ecc_uncorrected: 0 });
  assert.deepEqual(r.samples[3], { index: 3, bus: '0000:4e:00', util: 100, mem_util: 88, mem_used: 80011, mem_total: 81920, temp: 71, power: 398.77, ecc_uncorrected: 0 });
  const gpus = samplesWithHealth([0, 1, 2, 3], r, A100_BUSES, parseXids(fixture('dmesg-clean.txt')));
  assert.deepEqual(gpus.map((g) => g.fault), [null, null, null, null]);
  assert.deepEqual(gpus.map((g) => g.xid), [null, null, null, null], 'Xid 13 (the program\'s own fault) is not critical');
  assert.equal(faultOf({ nvml_error: null, gpus }), null);
  assert.ok(Value.Check(GpuTelemetry, { nvml_error: null, gpus }));
});

// Captured on a real H200 (driver 580.159.04) by scripts/gpu-probe.sh, idle and running bf16 matrix products.
test('a real H200, idle and under load: the driver\'s own rows read as they were printed', () => {
  const idle = parseTelemetry(fixture('h200-580-idle.txt'), 0);
  assert.deepEqual(idle, { samples: [{ index: 0, bus: '0000:00:06', util: 0, mem_util: 0, mem_used: 0, mem_total: 143771, temp: 36, power: 77.98, ecc_uncorrected: 0 }], lost: [], nvmlError: null });
  const load = parseTelemetry(fixture('h200-580-load.txt'), 0);
  assert.deepEqual(load.samples, [{ index: 0, bus: '0000:00:06', util: 99, mem_util: 23, mem_used: 883, mem_total: 143771, temp: 56, power: 421.52, ecc_uncorrected: 0 }]);
  const gpus = samplesWithHealth([0], load, new Map([[0, '0000:00:06']]), []);
  assert.deepEqual(gpus.map((g) => [g.fault, g.xid]), [[null, null]]);
  assert.ok(Value.Check(GpuTelemetry, { nvml_error: null, gpus }));
});

test('a GeForce card without ECC: [N/A] is null, not an error', () => {
  const r = parseTelemetry(fixture('rtx4090-na.txt'), 0);
  assert.equal(r.samples.length, 1);
  assert.equal(r.samples[0].ecc_uncorrected, null);
  assert.equal(r.samples[0].power, 28.51);
  assert.equal(samplesWithHealth([0], r, new Map(), [])[0].fault, null);
});

test('a lost GPU: its row is missing, nvidia-smi names its bus, and only that GPU is faulted', () => {
  const r = parseTelemetry(fixture('lost-gpu-a100-4x.txt'), 15);
  assert.equal(r.nvmlError, null);
  assert.deepEqual(r.lost, [{ bus: '0000:47:00', reason: 'GPU is lost. Reboot the system to recover this GPU' }]);
  assert.deepEqual(r.samples.map((s) => s.index), [0, 1, 3]);
  const gpus = samplesWithHealth([0, 1, 2, 3], r, A100_BUSES, []);
  assert.deepEqual(gpus.map((g) => g.fault), [null, null, 'GPU 2 is lost: GPU is lost. Reboot the system to recover this GPU', null]);
  assert.equal(gpus[2].util, null);
  assert.equal(faultOf({ nvml_error: null, gpus }), 'GPU 2 is lost: GPU is lost. Reboot the system to recover this GPU');
  // Without a remembered bus the lost line still faults the GPU that has no row.
  assert.match(samplesWithHealth([0, 1, 2, 3], r, new Map(), [])[2].fault!, /^GPU 2 is lost/);
  // A GPU simply missing from the list (no error line) is faulted too.
  const short = parseTelemetry(fixture('normal-a100-4x.txt').split('\n').slice(0, 3).join('\n'), 0);
  assert.equal(samplesWithHealth([0, 1, 2, 3], short, A100_BUSES, [])[3].fault, 'GPU 3 is missing from nvidia-smi');
});

test('an NVML failure: no GPU can be read, and every GPU is faulted with the driver\'s words', () => {
  const r = parseTelemetry(fixture('nvml-mismatch.txt'), 18);
  assert.equal(r.nvmlError, 'Failed to initialize NVML: Driver/library version mismatch');
  assert.deepEqual(r.samples, []);
  const gpus = samplesWithHealth([0, 1], r, new Map(), []);
  assert.deepEqual(gpus.map((g) => g.fault), ['Failed to initialize NVML: Driver/library version mismatch', 'Failed to initialize NVML: Driver/library version mismatch']);
  assert.equal(faultOf({ nvml_error: r.nvmlError, gpus }), 'NVML failed: Failed to initialize NVML: Driver/library version mismatch');
  // The driver not answering at all is the same kind of failure.
  const noDriver = parseTelemetry("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n", 9);
  assert.match(noDriver.nvmlError!, /couldn't communicate with the NVIDIA driver/);
  // A failure without words is named by its exit status.
  assert.equal(parseTelemetry('', 4).nvmlError, 'nvidia-smi exited with status 4');
});

test('critical Xids: 79 and 48/63 fault their own GPUs by bus; 13 does not', () => {
  const xids = parseXids(fixture('dmesg-xid.txt'));
  assert.deepEqual(xids.map((x) => [x.at, x.bus, x.xid]), [[8120.554018, '0000:07:00', 13], [9050.1, '0000:4e:00', 48], [9051.1, '0000:4e:00', 63], [9100.733211, '0000:47:00', 79]]);
  const r = parseTelemetry(fixture('normal-a100-4x.txt'), 0);
  const gpus = samplesWithHealth([0, 1, 2, 3], r, A100_BUSES, xids);
  assert.deepEqual(gpus.map((g) => g.xid), [null, null, 79, 63]);
  assert.deepEqual(gpus.map((g) => g.fault), [null, null, 'Xid 79: GPU has fallen off the bus', 'Xid 63: row remapping or page retirement pending, reset the GPU']);
  assert.equal(faultOf({ nvml_error: null, gpus }), 'GPU 2: Xid 79: GPU has fallen off the bus; GPU 3: Xid 63: row remapping or page retirement pending, reset the GPU');
  // An Xid line without a bus faults every GPU (the driver could not say which).
  const anyBus = parseXids('[ 10.5] NVRM: Xid (0000:00): 79, GPU has fallen off the bus.');
  assert.deepEqual(samplesWithHealth([0, 1], parseTelemetry(fixture('normal-a100-4x.txt').split('\n').slice(0, 2).join('\n'), 0), new Map(), anyBus).map((g) => g.xid), [79, 79]);
});

test('the heartbeat schema takes the sample and stays closed: older agents send none, a typo is refused', () => {
  const base = { agent_version: '1', desired_version: null, observed: [] };
  assert.ok(Value.Check(StatusBody, base));
  const gpus = samplesWithHealth([0], parseTelemetry(fixture('rtx4090-na.txt'), 0), new Map(), []);
  assert.ok(Value.Check(StatusBody, { ...base, gpu_telemetry: { nvml_error: null, gpus } }));
  assert.ok(!Value.Check(StatusBody, { ...base, gpu_telemetry: { nvml_error: null, gpus: [{ ...gpus[0], utilisation: 3 }] } }));
  assert.ok(!Value.Check(StatusBody, { ...base, gpu_telemetry: { nvml_error: null, gpus: [{ ...gpus[0], util: 101 }] } }));
  // Compact: a sample of 8 busy GPUs is under 1.5 kB of JSON.
  const eight = Array.from({ length: 8 }, (_, index) => ({ ...gpus[0], index, util: 99.5, mem_util: 87, mem_used: 80011, mem_total: 81920, temp: 71, power: 698.12, ecc_uncorrected: 0 }));
  assert.ok(JSON.stringify({ nvml_error: null, gpus: eight }).length < 1500);
});

/** A stand-in nvidia-smi and dmesg on PATH that print the fixtures named by files the test rewrites. */
function fakeTools(): { dir: string; exec: Exec; set(smi: string, code: number, dmesg: string): void } {
  const dir = mkdtempSync(join(tmpdir(), 'gpu-telemetry-'));
  const smi = join(dir, 'nvidia-smi');
  writeFileSync(smi, `#!/bin/sh\ncase "$1" in --query-gpu=*) ;; *) echo "unexpected: $*" >&2; exit 9;; esac\ncat "${dir}/smi.out"\nexit "$(cat "${dir}/smi.code")"\n`);
  writeFileSync(join(dir, 'dmesg'), `#!/bin/sh\ncat "${dir}/dmesg.out"\n`);
  chmodSync(smi, 0o755);
  chmodSync(join(dir, 'dmesg'), 0o755);
  return {
    dir,
    exec: programRunner({ ...process.env, PATH: `${dir}:${process.env.PATH}` }),
    set(smiOut, code, dmesg) {
      writeFileSync(join(dir, 'smi.out'), fixture(smiOut));
      writeFileSync(join(dir, 'smi.code'), String(code));
      writeFileSync(join(dir, 'dmesg.out'), fixture(dmesg));
    },
  };
}

test('the sampler runs the real programs, keeps the latest sample for the heartbeat, and tells of each change of health', async () => {
  const tools = fakeTools();
  let changes = 0;
  let uptime = 9200; // the Xid 79 of dmesg-xid.txt was logged at 9100.7 s
  const warnings: string[] = [];
  const sampler = gpuSampler({ exec: tools.exec, uptimeS: () => uptime, indices: [0, 1, 2, 3], intervalS: 10, onHealthChange: () => changes++, warn: (m) => warnings.push(m) });

  tools.set('normal-a100-4x.txt', 0, 'dmesg-clean.txt');
  const first = await sampler.sample();
  assert.deepEqual(first.gpus.map((g) => g.util), [97, 0, 45, 100]);
  assert.equal(changes, 0, 'a healthy first sample is no change');
  assert.deepEqual(sampler.take(), first);
  assert.equal(sampler.take(), undefined, 'a sample is handed over once');
  sampler.giveBack(first);
  assert.deepEqual(sampler.take(), first, 'a sample whose report failed is sent again');

  tools.set('lost-gpu-a100-4x.txt', 15, 'dmesg-clean.txt');
  const lost = await sampler.sample();
  assert.equal(lost.gpus[2].fault, 'GPU 2 is lost: GPU is lost. Reboot the system to recover this GPU');
  assert.equal(changes, 1);

  tools.set('nvml-mismatch.txt', 18, 'dmesg-clean.txt');
  assert.equal((await sampler.sample()).nvml_error, 'Failed to initialize NVML: Driver/library version mismatch');
  assert.equal(changes, 2);

  tools.set('normal-a100-4x.txt', 0, 'dmesg-xid.txt');
  assert.deepEqual((await sampler.sample()).gpus.map((g) => g.xid), [null, null, 79, 63]);
  assert.equal(changes, 3);
  // The same again: no change.
  await sampler.sample();
  assert.equal(changes, 3);
  // Past the hold time the Xids no longer fault the GPUs, which sample healthy: recovered.
  uptime = 9100.8 + XID_HOLD_S + 1;
  const after = await sampler.sample();
  assert.deepEqual(after.gpus.map((g) => g.fault), [null, null, null, null]);
  assert.equal(changes, 4);
  assert.deepEqual(warnings, []);
});

test('the sampler says nvidia-smi is missing as an NVML failure, and warns once when the kernel log cannot be read', async () => {
  const missing = gpuSampler({ exec: programRunner({ ...process.env, PATH: mkdtempSync(join(tmpdir(), 'empty-')) }), uptimeS: () => 100, indices: [0], intervalS: 10 });
  assert.equal((await missing.sample()).nvml_error, 'nvidia-smi was not found on PATH');
  const tools = fakeTools();
  tools.set('normal-a100-4x.txt', 0, 'dmesg-clean.txt');
  writeFileSync(join(tools.dir, 'dmesg'), '#!/bin/sh\necho "dmesg: read kernel buffer failed: Operation not permitted" >&2\nexit 1\n');
  const warnings: string[] = [];
  const s = gpuSampler({ exec: tools.exec, uptimeS: () => 100, indices: [0, 1, 2, 3], intervalS: 10, warn: (m) => warnings.push(m) });
  assert.deepEqual((await s.sample()).gpus.map((g) => g.fault), [null, null, null, null]);
  await s.sample();
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /Operation not permitted/);
});

test('reliability2: the share of the window up, silences and GPU faults merged, each fault at least an hour', () => {
  const now = 100 * 86_400;
  const created = 0;
  const W = RELIABILITY_WINDOW_S;
  assert.equal(reliabilityOf([], created, now), 1);
  // One day offline in 30 days.
  assert.equal(reliabilityOf([{ kind: 'offline', reason: 'x', started_at: now - 5 * 86_400, ended_at: now - 4 * 86_400 }], created, now), Math.round((1 - 86_400 / W) * 1e4) / 1e4);
  // A GPU fault of 10 s counts as an hour.
  assert.equal(reliabilityOf([{ kind: 'gpu', reason: 'x', started_at: now - 86_400, ended_at: now - 86_390 }], created, now), Math.round((1 - FAULT_MIN_DOWN_S / W) * 1e4) / 1e4);
  // Overlapping offline and GPU periods count once; a period before the window does not count.
  const overlap = [
    { kind: 'gpu' as const, reason: 'x', started_at: now - 10_000, ended_at: null },
    { kind: 'offline' as const, reason: 'x', started_at: now - 5_000, ended_at: now - 1_000 },
    { kind: 'offline' as const, reason: 'x', started_at: now - W - 10_000, ended_at: now - W - 5_000 },
  ];
  assert.equal(reliabilityOf(overlap, created, now), Math.round((1 - 10_000 / W) * 1e4) / 1e4);
  // A young machine is measured over its age, but at least a day: 6 h down in its first 2 days is 0.875.
  assert.equal(reliabilityOf([{ kind: 'offline', reason: 'x', started_at: now - 6 * 3600, ended_at: null }], now - 2 * 86_400, now), 0.875);
  assert.equal(reliabilityOf([{ kind: 'offline', reason: 'x', started_at: now - 3600, ended_at: null }], now - 60, now), Math.round((1 - 3600 / 86_400) * 1e4) / 1e4);
  // Never below 0.
  assert.equal(reliabilityOf([{ kind: 'offline', reason: 'x', started_at: 0, ended_at: null }], created, now), 0);
});
