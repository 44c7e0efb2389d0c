// Issue 34 item 1: the stand-in nvidia-smi of real containers on simulated machines, run by busybox's sh and the
// system's /bin/sh: the common queries, CUDA_VISIBLE_DEVICES narrowing it, refusals as nvidia-smi's, and the agent's own
// GPU discovery (src/agent/hardware.ts) reading it back as the machine it stands for.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nvidiaSmiScript } from '../src/emulator/emu-containers/nvidia-smi-stub.js';
import { discoverGpus, discoveredHardware, programRunner } from '../src/agent/hardware.js';

const dir = mkdtempSync(join(tmpdir(), 'gpuplane-emu-nvsmi-'));
const script = join(dir, 'nvidia-smi');
writeFileSync(script, nvidiaSmiScript({ gpuName: 'RTX 4090', count: 4, memoryMib: 24564, driverVersion: '550.54.14', cudaVersion: 12.4, computeCap: 890, machineId: 12 }));
chmodSync(script, 0o755);
after(() => rmSync(dir, { recursive: true, force: true }));

const SHELLS = [['busybox', 'sh'], ['/bin/sh']];
function smi(shell: string[], args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(shell[0], [...shell.slice(1), script, ...args], { env: { PATH: '/usr/bin:/bin', ...env }, encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

for (const shell of SHELLS) {
  test(`the common queries [${shell.join(' ')}]`, () => {
    const list = smi(shell, ['-L']);
    assert.equal(list.code, 0);
    assert.deepEqual(list.out.trim().split('\n').map((l) => l.replace(/\(UUID: GPU-[0-9a-f-]+\)/, '(UUID)')), [0, 1, 2, 3].map((i) => `GPU ${i}: NVIDIA RTX 4090 (UUID)`));
    assert.equal(new Set(list.out.match(/GPU-[0-9a-f-]+/g)).size, 4, 'a UUID per GPU');
    assert.equal(smi(shell, ['--query-gpu=name,memory.total,driver_version', '--format=csv']).out,
      'name, memory.total [MiB], driver_version\n' + 'NVIDIA RTX 4090, 24564 MiB, 550.54.14\n'.repeat(4));
    assert.equal(smi(shell, ['--query-gpu', 'index,memory.total,compute_cap', '--format', 'csv,noheader,nounits']).out, '0, 24564, 8.9\n1, 24564, 8.9\n2, 24564, 8.9\n3, 24564, 8.9\n');
    assert.equal(smi(shell, ['--query-gpu=count', '--format=csv,noheader']).out, '4\n4\n4\n4\n');
    const banner = smi(shell, []);
    assert.equal(banner.code, 0);
    assert.match(banner.out, /Driver Version: 550\.54\.14 +CUDA Version: 12\.4/);
    assert.equal(banner.out.match(/NVIDIA RTX 4090/g)?.length, 4);
  });

  test(`CUDA_VISIBLE_DEVICES narrows what it lists; refusals as nvidia-smi's [${shell.join(' ')}]`, () => {
    assert.deepEqual(smi(shell, ['-L'], { CUDA_VISIBLE_DEVICES: '1,3' }).out.match(/^GPU \d/gm), ['GPU 1', 'GPU 3']);
    assert.equal(smi(shell, ['--query-gpu=index', '--format=csv,noheader'], { CUDA_VISIBLE_DEVICES: '2' }).out, '2\n');
    const none = smi(shell, ['-L'], { CUDA_VISIBLE_DEVICES: '' });
    assert.deepEqual([none.code, none.out], [6, 'No devices were found\n']);
    const bad = smi(shell, ['--query-gpu=name,fan.speed', '--format=csv']);
    assert.deepEqual([bad.code, bad.out, bad.err], [2, '', 'Field "fan.speed" is not a valid field to query.\n']);
    assert.equal(smi(shell, ['--bogus']).code, 2);
  });
}

test("the agent's own GPU discovery reads the stand-in back as the machine it stands for", async () => {
  execFileSync('sh', ['-n', script]);
  const d = await discoverGpus(programRunner({ PATH: `${dir}:/usr/bin:/bin` }));
  assert.equal(d.gpus.length, 4);
  assert.deepEqual([d.driver_version, d.cuda_max_good], ['550.54.14', 12.4]);
  const hw = discoveredHardware(d, { cpuName: 'x', cpuCores: 8, cpuArch: 'amd64', ramMb: 64_000, hostname: 'h', firstIpv4: null }, 100, { publicIp: '127.0.0.1', portRange: { start: 40000, end: 40099 } });
  assert.deepEqual([hw.gpu_name, hw.num_gpus, hw.gpu_ram], ['RTX 4090', 4, 24564]);
});
